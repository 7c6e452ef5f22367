package digest_test

import (
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/digest"
	"github.com/incidentbot/incidentbot/store"
)

// TestAddedLeavesOutTheLibraryAnInstallShippedWith: the built-in library's
// cases are all dated by when they were last changed; on a new install
// whose first week contains those dates, the digest must not announce the
// whole library as added this week. A team's own new case is still listed,
// and so is a built-in case that changed after the install began.
func TestAddedLeavesOutTheLibraryAnInstallShippedWith(t *testing.T) {
	week, err := digest.ParseWeek("2026-W49", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	monday := week.From
	builtin := &cases.Set{Name: cases.BuiltinSource}
	for i, day := range []int{0, 0, 1, 3} { // three shipped before the first alert, one after
		builtin.Cases = append(builtin.Cases, &cases.Case{ID: "public-" + string(rune('a'+i)), UpdatedAt: monday.AddDate(0, 0, day).Format(time.RFC3339)})
	}
	team := &cases.Set{Name: "files", Cases: []*cases.Case{{ID: "ours-1", UpdatedAt: monday.Format(time.RFC3339)}}}
	lib, _ := cases.NewLibrary(builtin, team)
	firstAlert := []store.Suggestion{{Key: "C1:1", Time: monday.AddDate(0, 0, 2), Channel: "C1"}}

	added := func(in digest.Input) []string {
		var ids []string
		for _, c := range digest.Compose(in).Added {
			ids = append(ids, c.ID)
		}
		return ids
	}
	in := digest.Input{Target: "C1", Week: week, This: firstAlert, Library: lib}
	if got, want := added(in), []string{"public-d", "ours-1"}; !equalSets(got, want) {
		t.Errorf("first week of a new install lists %v, want %v", got, want)
	}
	in.This = nil
	if got, want := added(in), []string{"ours-1"}; !equalSets(got, want) {
		t.Errorf("a new install with no activity yet lists %v, want %v", got, want)
	}
	// An install with activity the week before is older than this week: a
	// built-in case changed this week is news (an upgrade brought it).
	in.This, in.Prev = firstAlert, []store.Suggestion{{Key: "C1:0", Time: monday.AddDate(0, 0, -3), Channel: "C1"}}
	if got := added(in); len(got) != 5 {
		t.Errorf("an older install lists %v, want all five cases changed this week", got)
	}
}

func equalSets(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}
