package eval_test

import (
	"context"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/matcher/eval"
)

// TestRunUnseenLeavesEachQueryOwnCaseOut checks that RunUnseen matches a
// query about a case with a library that does not hold it, and still
// measures every query once: with the case in the library each query
// finds its own case, left out none can.
func TestRunUnseenLeavesEachQueryOwnCaseOut(t *testing.T) {
	set, err := cases.Load("../testdata/library", cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	lib, _ := cases.NewLibrary(set)
	var qs []eval.Query
	for _, c := range lib.Cases() {
		qs = append(qs, eval.Query{
			ID: "q-" + c.ID, Lang: "en", Kind: "report",
			Text:     c.Title.In(cases.English) + ". " + c.Summary.In(cases.English),
			Symptoms: c.Symptoms, Components: c.Components, Case: c.ID,
		})
	}
	// About no case of the library: nothing to leave out, not measured.
	qs = append(qs, eval.Query{ID: "no-case", Lang: "en", Kind: "chat", Text: "checkout p99 is 4s and climbing",
		Symptoms: []string{"high-latency"}, Components: []string{"backend-service"}})
	for i, text := range []string{"lunch at noon?", "the retro notes are in the wiki", "welcome to the team!"} {
		qs = append(qs, eval.Query{ID: "chatter-" + string(rune('a'+i)), Lang: "en", Kind: "chatter", Text: text})
	}
	ctx := context.Background()

	m, err := matcher.New(lib, matcher.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	seen, err := eval.Run(ctx, m, qs)
	if err != nil {
		t.Fatal(err)
	}
	if seen.GoldCounts != lib.Len() || seen.GoldHit3 < 0.9 || seen.Positives != lib.Len()+1 {
		t.Fatalf("with every case in the library: %d positive queries, own case counted for %d of %d, found in the first three for %.2f; want all, and most found",
			seen.Positives, seen.GoldCounts, lib.Len(), seen.GoldHit3)
	}

	unseen, err := eval.RunUnseen(ctx, lib, matcher.Options{}, qs)
	if err != nil {
		t.Fatal(err)
	}
	if unseen.GoldCounts != 0 {
		t.Errorf("left out: %d queries were matched with their own case in the library, want 0", unseen.GoldCounts)
	}
	if unseen.Positives != lib.Len() || unseen.Chatter != 3 {
		t.Errorf("left out: measured %d positive queries and %d chatter, want %d and 3", unseen.Positives, unseen.Chatter, lib.Len())
	}
	if unseen.Hit3 == 0 {
		t.Errorf("left out: hit@3 0; the other cases that share the queries' tags should still be found")
	}
}
