package matcher_test

import (
	"context"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// TestOwnCaseLeadsAnEqualPublicOne: a team's own case that fits a text as
// well as a built-in one is shown first. The copy is the same incident under
// another id, so text, tags and cause tie; only its origin tells them apart,
// and the tie-break by id alone would put the built-in case first.
func TestOwnCaseLeadsAnEqualPublicOne(t *testing.T) {
	tax := cases.DefaultTaxonomy()
	builtin, err := cases.Builtin(tax)
	if err != nil {
		t.Fatal(err)
	}
	var orig *cases.Case
	for _, c := range builtin.Cases {
		if c.ID == "github-2018-10-21" {
			orig = c
		}
	}
	if orig == nil {
		t.Fatal("github-2018-10-21 is not in the built-in library")
	}
	own := *orig
	own.ID = "team-network-partition"
	lib, _ := cases.NewLibrary(builtin, &cases.Set{Name: "team", Cases: []*cases.Case{&own}})
	m, err := matcher.New(lib, matcher.Options{Taxonomy: tax})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ans, err := m.Match(context.Background(), orig.SymptomsText.En, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range ans.Results {
		got = append(got, r.Case.ID)
	}
	if len(got) < 2 || got[0] != own.ID {
		t.Errorf("got %v, want the team's own %s first, then %s", got, own.ID, orig.ID)
	}
}
