package cases_test

import (
	"os"
	"strings"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
)

// TestBuiltinProvenance keeps the provenance marks of the built-in library:
// every remediation step and action item says whether the organisation
// stated it or the writer suggested it, and every case says how its symptoms
// text came about. testdata/provenance-backlog.txt lists the cases not yet
// checked against their sources; it may only shrink, and a case that gets its
// marks must leave it.
func TestBuiltinProvenance(t *testing.T) {
	data, err := os.ReadFile("testdata/provenance-backlog.txt")
	if err != nil {
		t.Fatal(err)
	}
	backlog := map[string]bool{}
	for _, id := range strings.Fields(string(data)) {
		backlog[id] = true
	}
	set, err := cases.Builtin(cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	var steps, stated, suggested, reviewed int
	for _, c := range set.Cases {
		unmarked := 0
		for _, s := range append(append([]cases.Step(nil), c.Remediation...), c.ActionItems...) {
			steps++
			switch s.Provenance {
			case cases.Stated:
				stated++
			case cases.Suggested:
				suggested++
			default:
				unmarked++
			}
		}
		switch {
		case unmarked > 0 && !backlog[c.ID]:
			t.Errorf("case %s: %d steps lack provenance: mark each \"stated\" or \"suggested\"", c.ID, unmarked)
		case unmarked == 0 && backlog[c.ID]:
			t.Errorf("case %s is marked now: take it out of testdata/provenance-backlog.txt", c.ID)
		}
		if c.SymptomsTextKind == "" && !backlog[c.ID] {
			t.Errorf("case %s: symptoms_text_kind is missing", c.ID)
		}
		if c.Review.ReviewedBy != nil {
			reviewed++
		}
	}
	if len(backlog) > 10 {
		t.Errorf("the backlog grew to %d cases; it may only shrink", len(backlog))
	}
	t.Logf("%d cases, %d reviewed against sources; %d steps: %d stated, %d suggested; %d cases in the backlog",
		len(set.Cases), reviewed, steps, stated, suggested, len(backlog))
}
