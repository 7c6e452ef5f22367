package matcher_test

import (
	"cmp"
	"context"
	"slices"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// TestTalkIsNotTrouble checks what the trouble model is for: plans, reviews
// and notes about a system (which name it, and which the tag model reads
// symptoms into) get no answer, while reports of trouble with the same
// systems do. The same gate blind to the trouble model (its three features
// that read it weighing nothing) answers some of the talk, so the test
// shows the model doing the work.
func TestTalkIsNotTrouble(t *testing.T) {
	tax := cases.DefaultTaxonomy()
	builtin, err := cases.Builtin(tax)
	if err != nil {
		t.Fatal(err)
	}
	lib, _ := cases.NewLibrary(builtin)
	m := newMatcher(t, lib, matcher.Options{})
	off := matcher.DefaultWeights
	if len(off.GateModel) == 0 {
		t.Fatal("weights.json has no gate model")
	}
	// GateFeatures 1, 7 and 8 read the trouble model: its log-odds, and a
	// component and a symptom each times its probability.
	off.GateModel = slices.Clone(off.GateModel)
	off.GateModel[1], off.GateModel[7], off.GateModel[8] = 0, 0, 0
	without := newMatcher(t, lib, matcher.Options{Weights: &off})
	answered := func(m *matcher.Matcher, text string) bool {
		t.Helper()
		ans, err := m.Match(context.Background(), text, 3)
		if err != nil {
			t.Fatalf("Match(%q): %v", text, err)
		}
		return len(ans.Results) > 0
	}
	talk := []string{
		"I'm adding a link to the load balancer dashboard in the on-call handbook",
		"we plan to upgrade the redis cluster to 7.2 next week, please review the runbook",
		"다음 주에 레디스 클러스터 7.2 업그레이드 예정입니다. 런북 리뷰 부탁드려요",
		"결제 데이터베이스 마이그레이션 계획 문서 리뷰 부탁드립니다",
		"can someone review my PR that adds retries to the kafka consumer",
		"TLS 인증서 자동 갱신 설정을 추가해 두었습니다",
	}
	var caught int
	for _, text := range talk {
		if answered(m, text) {
			t.Errorf("Match(%q) answered talk about a system", text)
		}
		if answered(without, text) {
			caught++
		}
	}
	if caught == 0 {
		t.Error("without the trouble model no talk is answered either: the test no longer shows what the model does")
	}
	for _, text := range []string{
		"the load balancer is returning 502s for every request to checkout",
		"로드밸런서에서 결제 요청마다 502 에러가 납니다",
		"orders service cannot reach postgres, every query times out",
	} {
		if !answered(m, text) {
			t.Errorf("Match(%q) got no answer", text)
		}
	}
}

// TestTroubleModelIsReproducible trains the trouble model on the same
// library several times: every start must give the same model, or the
// same message would be answered by one replica and not another.
func TestTroubleModelIsReproducible(t *testing.T) {
	tax := cases.DefaultTaxonomy()
	set, err := cases.Load("testdata/library", tax)
	if err != nil {
		t.Fatal(err)
	}
	lib, _ := cases.NewLibrary(set)
	texts := []string{
		"checkout returns 502s since the deploy",
		"we plan to upgrade the redis cluster next week",
		"결제 API 응답이 계속 타임아웃 납니다",
	}
	first := matcher.TroubleOf(lib, tax, texts)
	for range 8 {
		if got := matcher.TroubleOf(lib, tax, texts); !slices.Equal(got, first) {
			t.Fatalf("the same library trained %v, then %v", first, got)
		}
	}
}

// TestMessagesTeachTheModel checks that the built-in messages do what they
// are for: cross-validated, the trouble model tells their reports of
// trouble from the rest far better when it has learned from the other
// folds' messages than from the library's texts alone.
func TestMessagesTeachTheModel(t *testing.T) {
	var ps []float64
	for i := 1; i < 100; i++ {
		ps = append(ps, float64(i)/100)
	}
	tax := cases.DefaultTaxonomy()
	lib := testLibrary(t)
	area := func(fits []matcher.TroubleFit) float64 {
		type point struct{ x, y float64 }
		pts := []point{{0, 0}, {1, 1}}
		for _, f := range fits {
			pts = append(pts, point{1 - f.MessageQuiet, f.MessageRecall})
		}
		slices.SortFunc(pts, func(a, b point) int {
			if a.x != b.x {
				return cmp.Compare(a.x, b.x)
			}
			return cmp.Compare(a.y, b.y)
		})
		var a float64
		for i := 1; i < len(pts); i++ {
			a += (pts[i].x - pts[i-1].x) * (pts[i].y + pts[i-1].y) / 2
		}
		return a
	}
	without := area(matcher.CrossValidateTrouble(lib, tax, ps, false))
	with := area(matcher.CrossValidateTrouble(lib, tax, ps, true))
	t.Logf("area under the ROC curve on the built-in messages: %.3f from the library alone, %.3f with the messages", without, with)
	if with < without+0.05 || with < 0.9 {
		t.Errorf("area %.3f with the messages, %.3f without: want at least 0.9 and 0.05 more", with, without)
	}
}
