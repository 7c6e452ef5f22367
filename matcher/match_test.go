package matcher_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testLibrary loads the labelled test library written for these tests.
func testLibrary(t testing.TB) *cases.Library {
	t.Helper()
	set, err := cases.Load("testdata/library", cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	if set.Errors() > 0 {
		t.Fatalf("test library has problems: %v", set.Problems)
	}
	lib, _ := cases.NewLibrary(set)
	return lib
}

func newMatcher(t testing.TB, lib *cases.Library, opts matcher.Options) *matcher.Matcher {
	t.Helper()
	m, err := matcher.New(lib, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// goldenQueries are the lines of testdata/golden/queries.txt, one query
// each.
func goldenQueries(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("testdata/golden/queries.txt")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// golden queries: each line of testdata/golden/queries.txt is a query; the
// ranking of each is kept in testdata/golden/rankings.json.
func TestRankingsGolden(t *testing.T) {
	m := newMatcher(t, testLibrary(t), matcher.Options{})
	type ranked struct {
		Query   string   `json:"query"`
		Lang    string   `json:"lang"`
		Signals []string `json:"signals"`
		Top     []string `json:"top"`
	}
	var got []ranked
	for _, q := range goldenQueries(t) {
		ans, err := m.Match(context.Background(), q, 3)
		if err != nil {
			t.Fatal(err)
		}
		r := ranked{Query: q, Lang: string(ans.Lang), Signals: []string{}, Top: []string{}}
		for _, s := range slices.Concat(ans.Symptoms, ans.Components) {
			r.Signals = append(r.Signals, s.ID)
		}
		for _, res := range ans.Results {
			r.Top = append(r.Top, fmt.Sprintf("%s %.3f", res.Case.ID, res.Score))
		}
		got = append(got, r)
	}
	out, _ := json.MarshalIndent(got, "", "  ")
	const path = "testdata/golden/rankings.json"
	if *update {
		if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./matcher -run Golden -update)", err)
	}
	var wantR []ranked
	if err := json.Unmarshal(want, &wantR); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if i >= len(wantR) || !slices.Equal(got[i].Top, wantR[i].Top) || !slices.Equal(got[i].Signals, wantR[i].Signals) {
			t.Errorf("ranking of %q changed:\n got %v %v", got[i].Query, got[i].Signals, got[i].Top)
			if i < len(wantR) {
				t.Errorf("want %v %v", wantR[i].Signals, wantR[i].Top)
			}
		}
	}
}

func TestMatchExplains(t *testing.T) {
	m := newMatcher(t, testLibrary(t), matcher.Options{})
	ans, err := m.Match(context.Background(), "postgres: FATAL: sorry, too many clients already; checkout API returning 500s", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ans.Results) == 0 {
		t.Fatal("no results")
	}
	r := ans.Results[0]
	if r.Score <= 0 || r.Score > 1 {
		t.Errorf("score %v not in (0, 1]", r.Score)
	}
	if len(r.Symptoms)+len(r.Components) == 0 {
		t.Errorf("top result %s shares no tag with the query %v %v", r.Case.ID, ans.Symptoms, ans.Components)
	}
	for _, tg := range slices.Concat(r.Symptoms, r.Components) {
		if tg.Label == "" || tg.Label == tg.ID {
			t.Errorf("tag %s has no label", tg.ID)
		}
	}
	if len(r.Terms) == 0 {
		t.Errorf("no matched terms for %s", r.Case.ID)
	}
	for i := 1; i < len(ans.Results); i++ {
		if ans.Results[i].Score > ans.Results[i-1].Score {
			t.Errorf("results out of order: %v", ans.Results)
		}
	}
}

// TestVagueReportGetsItsLikeliestSymptom: a first status update that
// names a service and no symptom a phrase knows ("investigating an issue
// affecting X") still reports trouble; the model's likeliest symptom
// counts, so the answer names it and most of the cases it ranks first
// share it, not only the service's name.
func TestVagueReportGetsItsLikeliestSymptom(t *testing.T) {
	lib := builtinLibrary(t)
	m := newMatcher(t, lib, matcher.Options{})
	for _, text := range []string{
		"We are investigating an issue affecting Cloud SQL instances in europe-west2.",
		"We are currently investigating an issue impacting the Payments API.",
	} {
		sc, err := m.Score(context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Report < 0.5 {
			t.Fatalf("%q: the trouble model reads it as talk (%.2f); the test needs a report", text, sc.Report)
		}
		if sc.Sym > 0 || sc.SymLearned > 0 {
			t.Fatalf("%q: a phrase or a sure prediction gives a symptom; the test needs a vague text", text)
		}
		if len(sc.Symptoms) != 1 {
			t.Fatalf("%q: symptoms %v, want the one likeliest", text, sc.Symptoms)
		}
		want := sc.Symptoms[0].ID
		ans, err := m.Rank(context.Background(), text, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(ans.Results) == 0 {
			t.Fatalf("%q: no cases ranked", text)
		}
		n := 0
		var ids []string
		for _, r := range ans.Results {
			ids = append(ids, r.Case.ID)
			if slices.Contains(r.Case.Symptoms, want) {
				n++
			}
		}
		if n < 2 {
			t.Errorf("%q: %d of the first three cases (%v) have %s, want at least two", text, n, ids, want)
		}
	}
}

// TestReportsWhatTheNearestCasesAgreeOn: a text about a known incident
// that names its trouble in words no phrase or model knows still reports
// the tag the cases that read like it carry, and says where it came from.
func TestReportsWhatTheNearestCasesAgreeOn(t *testing.T) {
	lib := builtinLibrary(t)
	m := newMatcher(t, lib, matcher.Options{})
	for _, tc := range []struct {
		text, want string
	}{
		{"someone pushed commits to the gentoo github mirror after taking over an org admin account; developers got kicked out of the org",
			"security-compromise"},
		{"caucus results app: precinct leaders locked out at login, the tallies it sent are inconsistent",
			"data-inconsistency"},
		{"코커스 결과 앱에 선거구 위원장들이 로그인을 못 하고 있고, 올라온 개표 숫자도 현장에서 센 표랑 딴판이에요",
			"data-inconsistency"},
	} {
		inf := m.Infer(tc.text)
		if slices.ContainsFunc(inf.Symptoms, func(x matcher.Inferred) bool { return x.ID == tc.want }) {
			t.Fatalf("%q: the text alone gives %s; the test needs one it does not", tc.text, tc.want)
		}
		ans, err := m.Match(context.Background(), tc.text, 3)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(ans.Symptoms, func(s matcher.Signal) bool { return s.ID == tc.want })
		if i < 0 {
			t.Errorf("%q: symptoms %v, want %s, which the nearest cases carry", tc.text, ans.Symptoms, tc.want)
			continue
		}
		if s := ans.Symptoms[i]; s.Phrase != matcher.VotedPhrase {
			t.Errorf("%q: %s reported as %+v, want it voted by the nearest cases", tc.text, tc.want, s)
		}
	}
}

// TestReportsOnlySureSignals: the tags an answer says the text signals are
// the sure ones, each at least ReportShare as strong as the strongest of
// its kind; a weak guess beside a sure tag steers the ranking (the golden
// rankings hold it) but is not shown.
func TestReportsOnlySureSignals(t *testing.T) {
	m := newMatcher(t, testLibrary(t), matcher.Options{})
	for _, q := range goldenQueries(t) {
		ans, err := m.Match(context.Background(), q, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, sigs := range [][]matcher.Signal{ans.Symptoms, ans.Components} {
			for _, s := range sigs {
				if s.Weight < matcher.ReportShare*sigs[0].Weight {
					t.Errorf("%q: %s reported at %.2f beside %s at %.2f", q, s.ID, s.Weight, sigs[0].ID, sigs[0].Weight)
				}
			}
		}
	}
}

func TestMatchKoreanLabels(t *testing.T) {
	m := newMatcher(t, testLibrary(t), matcher.Options{})
	ans, err := m.Match(context.Background(), "DB 커넥션 풀이 다 찼어요, 결제 API 타임아웃 계속 납니다", 3)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Lang != cases.Korean || len(ans.Results) == 0 {
		t.Fatalf("lang %s, %d results", ans.Lang, len(ans.Results))
	}
	shared := slices.Concat(ans.Results[0].Symptoms, ans.Results[0].Components)
	if len(shared) == 0 {
		t.Fatalf("top result %s shares no tag with the text (signals %v %v)", ans.Results[0].Case.ID, ans.Symptoms, ans.Components)
	}
	for _, tg := range shared {
		if matcher.DetectLang(tg.Label) != cases.Korean {
			t.Errorf("label %q of %s is not Korean", tg.Label, tg.ID)
		}
	}
}

func TestSilentOnChatter(t *testing.T) {
	m := newMatcher(t, testLibrary(t), matcher.Options{})
	for _, text := range []string{
		"thanks all!", "joining the bridge", "on it", ":eyes:", "🙏", "감사합니다", "확인했습니다",
		"[RESOLVED] KubePodCrashLooping payments-api", "Resolved: High 5xx rate on api-gateway",
		"", "   \n\t", "\x00\x01\x02",
	} {
		ans, err := m.Match(context.Background(), text, 3)
		if err != nil {
			t.Fatalf("Match(%q): %v", text, err)
		}
		if len(ans.Results) > 0 {
			t.Errorf("Match(%q) answered %s (%.2f)", text, ans.Results[0].Case.ID, ans.Results[0].Score)
		}
	}
}

func TestSearchFilters(t *testing.T) {
	lib := testLibrary(t)
	m := newMatcher(t, lib, matcher.Options{})
	ctx := context.Background()

	// A filter with no text lists every matching case, newest first.
	ans, err := m.Search(ctx, "component:relational-database", 100)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, c := range lib.Cases() {
		if slices.Contains(c.Components, "relational-database") {
			want++
		}
	}
	if len(ans.Results) != want || want == 0 {
		t.Fatalf("got %d cases, want %d", len(ans.Results), want)
	}
	for i, r := range ans.Results {
		if i > 0 && r.Case.Date > ans.Results[i-1].Case.Date {
			t.Errorf("not newest first: %s after %s", r.Case.Date, ans.Results[i-1].Case.Date)
		}
	}

	// Filters combine with text and with each other.
	ans, err = m.Search(ctx, "slow queries symptom:high-latency since:2021", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ans.Results) == 0 {
		t.Fatal("no case passes symptom:high-latency since:2021 with text about slow queries")
	}
	for _, r := range ans.Results {
		if !slices.Contains(r.Case.Symptoms, "high-latency") || r.Case.Date < "2021" {
			t.Errorf("%s (%s %v) does not pass the filters", r.Case.ID, r.Case.Date, r.Case.Symptoms)
		}
	}

	for _, bad := range []string{"symptom:slowness", "since:last-week", "component:"} {
		_, err := m.Search(ctx, bad, 3)
		if bad == "component:" {
			if err != nil {
				t.Errorf("Search(%q): a bare word with a colon is text, got %v", bad, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("Search(%q): no error", bad)
		}
	}
}

func TestParseQuery(t *testing.T) {
	text, f, err := matcher.ParseQuery(`x509: expired component:cdn org:"Google Cloud" since:2023-05 see https://example.com/a:b`)
	if err != nil {
		t.Fatal(err)
	}
	if text != "x509: expired see https://example.com/a:b" {
		t.Errorf("text = %q", text)
	}
	if !slices.Equal(f.Components, []string{"cdn"}) || !slices.Equal(f.Orgs, []string{"google cloud"}) || f.Since != "2023-05" {
		t.Errorf("filters = %+v", f)
	}
}

func TestOddInputNeverFails(t *testing.T) {
	m := newMatcher(t, testLibrary(t), matcher.Options{})
	huge := strings.Repeat("disk full on /var/lib/postgresql; No space left on device ", 20000) // about 1 MB
	for _, text := range []string{huge, string([]byte{0xff, 0xfe, 0x00, 0x80}), "AND OR NOT +foo -bar field:value \"unterminated", "*:* ^2 ~ (a) [b TO c]", strings.Repeat("가", 100000), "\u202e\u200b\ufeff"} {
		if _, err := m.Match(context.Background(), text, 3); err != nil {
			t.Errorf("Match(%.40q...): %v", text, err)
		}
		if _, err := m.Search(context.Background(), text, 3); err != nil && !strings.Contains(err.Error(), "no such") {
			t.Errorf("Search(%.40q...): %v", text, err)
		}
	}
}

func TestIndexCachedOnDisk(t *testing.T) {
	dir := t.TempDir()
	lib := testLibrary(t)
	m1 := newMatcher(t, lib, matcher.Options{IndexDir: dir})
	if m1.Reused() {
		t.Fatal("first start reused an index")
	}
	first, err := m1.Match(context.Background(), "OOMKilled pods restarting", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Results) == 0 {
		t.Fatal("no answer to compare")
	}
	inf1 := m1.Infer("OOMKilled pods restarting after the deploy")
	m1.Close()
	models, _ := filepath.Glob(filepath.Join(dir, "model-*.gob"))
	if len(models) != 1 {
		t.Fatalf("%d cached tag models in the index directory, want 1", len(models))
	}
	m2 := newMatcher(t, lib, matcher.Options{IndexDir: dir})
	if !m2.Reused() {
		t.Fatal("second start with the same library rebuilt the index")
	}
	second, err := m2.Match(context.Background(), "OOMKilled pods restarting", 3)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids3(first)) != fmt.Sprint(ids3(second)) {
		t.Errorf("answers differ: %v vs %v", ids3(first), ids3(second))
	}
	if inf2 := m2.Infer("OOMKilled pods restarting after the deploy"); fmt.Sprint(inf1) != fmt.Sprint(inf2) {
		t.Errorf("the cached tag model infers differently:\n%v\n%v", inf1, inf2)
	}
	// A changed library must not reuse the old index.
	smaller, _ := cases.NewLibrary(&cases.Set{Name: "one", Cases: lib.Cases()[:3]})
	m3 := newMatcher(t, smaller, matcher.Options{IndexDir: dir})
	if m3.Reused() {
		t.Error("a changed library reused the old index")
	}
}

func ids3(a *matcher.Answer) []string {
	var out []string
	for _, r := range a.Results {
		out = append(out, r.Case.ID)
	}
	return out
}

func FuzzMatch(f *testing.F) {
	for _, s := range []string{"x509: certificate has expired", "인증서가 만료되었습니다", "symptom:high-latency since:2020 slow", "org:\"a", "since:", "\xff", "[RESOLVED] x"} {
		f.Add(s)
	}
	m := newMatcher(f, testLibrary(f), matcher.Options{})
	f.Fuzz(func(t *testing.T, text string) {
		ans, err := m.Match(context.Background(), text, 3)
		if err != nil {
			t.Fatalf("Match: %v", err)
		}
		for _, r := range ans.Results {
			if r.Score < 0 || r.Score > 1 {
				t.Errorf("score %v", r.Score)
			}
		}
		_, _ = m.Search(context.Background(), text, 3)
		_, _, _ = matcher.ParseQuery(text)
	})
}

// TestRecoveringNoticeIsTrouble checks that a Korean notice that recovery
// is under way is answered like any report of the problem, while one that
// says it is over is not.
func TestRecoveringNoticeIsTrouble(t *testing.T) {
	m := newMatcher(t, testLibrary(t), matcher.Options{})
	const trouble = " 결제 API에서 DB 커넥션 풀이 가득 차 타임아웃이 계속되고 있습니다. 원인을 조치하고 있습니다."
	for _, prefix := range []string{"[복구 중]", "[복구중]", "[복구 진행 중]", "[복구 완료 전 안내]", "[정상화 작업 중]"} {
		ans, err := m.Match(context.Background(), prefix+trouble, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(ans.Results) == 0 {
			t.Errorf("%s: not answered", prefix)
		}
	}
	for _, prefix := range []string{"[복구 완료]", "[복구]", "[해결됨]", "[정상화]", "복구 완료:"} {
		ans, err := m.Match(context.Background(), prefix+" 결제 API 타임아웃이 해소되었습니다.", 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(ans.Results) > 0 {
			t.Errorf("%s: answered %s", prefix, ans.Results[0].Case.ID)
		}
	}
}

// TestNamedIncidentLeads checks that a text which names one incident, by
// its product, its commands and what broke, is answered with that
// incident first, though the tags the text signals are not its tags; and
// that without the named model the cases that share those tags bury it.
func TestNamedIncidentLeads(t *testing.T) {
	lib := builtinLibrary(t)
	const text = "caucus night and precinct chairs still can't get the results app past its six-digit codes; the hotline is jammed and the tallies we did get don't add up"
	const want = "iowa-democratic-party-2020-02-03"
	on := matcher.DefaultWeights
	if on.Named == 0 || len(on.NamedModel) == 0 {
		t.Fatal("weights.json has no named model")
	}
	off := on
	off.Named = 0
	for _, c := range []struct {
		name  string
		w     matcher.Weights
		first bool
	}{{"named model", on, true}, {"without it", off, false}} {
		t.Run(c.name, func(t *testing.T) {
			m := newMatcher(t, lib, matcher.Options{Weights: &c.w})
			ans, err := m.Match(context.Background(), text, 3)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range ans.Results {
				ids = append(ids, r.Case.ID)
			}
			if got := len(ids) > 0 && ids[0] == want; got != c.first {
				t.Errorf("answer %v: %s first is %v, want %v", ids, want, got, c.first)
			}
		})
	}
}

// TestDeployTextPrefersDeployCaused: the README's first command, a text
// that says its trouble came "after a deploy", is answered mostly with
// cases a deploy brought on. The first is Ably's load balancer incident:
// the best text hit by a wide lead, which the named model gives 0.18 (a
// variant that counted it only from 0.3 put Stytch's deploy first, and
// found known incidents less often on four blind sets).
func TestDeployTextPrefersDeployCaused(t *testing.T) {
	lib := builtinLibrary(t)
	m := newMatcher(t, lib, matcher.Options{})
	const text = "p99 latency is up and the load balancer returns 502s after a deploy"
	ans, err := m.Match(context.Background(), text, 5)
	if err != nil {
		t.Fatal(err)
	}
	var causes []string
	deploys := 0
	for _, r := range ans.Results {
		causes = append(causes, r.Case.ID+":"+r.Case.RootCause)
		if r.Case.RootCause == "deploy-rollout" {
			deploys++
		}
	}
	if len(ans.Results) < 3 || deploys*2 <= len(ans.Results) {
		t.Errorf("answer %v: want most of the first five deploy-caused", causes)
	}
}

// builtinLibrary loads the library the bot ships with.
func builtinLibrary(t *testing.T) *cases.Library {
	t.Helper()
	set, err := cases.Builtin(cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	lib, _ := cases.NewLibrary(set)
	return lib
}
