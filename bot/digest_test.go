package bot

import (
	"fmt"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/digest"
	"github.com/incidentbot/incidentbot/store"
)

func testLibrary(t *testing.T) *cases.Library {
	t.Helper()
	set, err := cases.Load("../matcher/testdata/library", cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	lib, _ := cases.NewLibrary(set)
	return lib
}

// generatedWeek is a week of activity made up for the tests: n suggestions
// over a few channels, with votes.
func generatedWeek(t *testing.T, n int, lang cases.Lang) *digest.Digest {
	lib := testLibrary(t)
	week, _ := digest.ParseWeek("2026-W48", time.UTC)
	all := lib.Cases()
	var this, prev []store.Suggestion
	var fb []store.Feedback
	for i := range n {
		c := all[(i*7)%len(all)]
		s := store.Suggestion{Time: week.From.Add(time.Duration(i) * time.Minute % (7 * 24 * time.Hour)), Channel: fmt.Sprintf("C%d", i%9),
			Symptoms: c.Symptoms, Components: c.Components, Cases: []store.ScoredCase{{CaseID: c.ID, Score: 0.8}}}
		this = append(this, s)
		if i%3 == 0 {
			prev = append(prev, s)
		}
		if i%5 == 0 {
			v := store.Helpful
			if i%10 == 0 {
				v = store.NotRelevant
			}
			fb = append(fb, store.Feedback{Time: s.Time, Channel: s.Channel, CaseID: c.ID, Vote: v, User: fmt.Sprint(i)})
		}
	}
	return digest.Compose(digest.Input{Target: "C0", Lang: lang, Week: week, This: this, Prev: prev, Feedback: fb, Library: lib})
}

func TestDigestGolden(t *testing.T) {
	tax := cases.DefaultTaxonomy()
	for _, lang := range []cases.Lang{cases.English, cases.Korean} {
		blocks, fallback := RenderDigest(generatedWeek(t, 40, lang), tax)
		golden(t, "digest-"+string(lang), blocks, fallback)
	}
	blocks, fallback := RenderDigest(generatedWeek(t, 0, cases.Korean), tax)
	golden(t, "digest-quiet-ko", blocks, fallback)
}

func TestDigestWithinSlackLimits(t *testing.T) {
	d := generatedWeek(t, 10000, cases.Korean)
	if d.Suggestions != 10000 {
		t.Fatalf("%d suggestions", d.Suggestions)
	}
	blocks, fallback := RenderDigest(d, cases.DefaultTaxonomy())
	checkLimits(t, blocks, fallback)
}
