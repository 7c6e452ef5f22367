package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/store"
)

// RunShared runs the part of the contract that needs two stores on one
// database, as two replicas have: open returns them, on a new, empty
// database, and RunShared closes both when the subtest ends.
func RunShared(t *testing.T, open func(t *testing.T) (store.Store, store.Store)) {
	tests := []struct {
		name string
		fn   func(t *testing.T, a, b store.Store)
	}{
		{"TeamCasesFromTwoStores", testTeamCasesFromTwoStores},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := open(t)
			t.Cleanup(func() {
				if err := errors.Join(a.Close(), b.Close()); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, a, b)
		})
	}
}

// teamCase returns a team case with every field set but Version.
func teamCase(id string) store.TeamCase {
	return store.TeamCase{
		ID:        id,
		Case:      []byte(`{"id":"` + id + `","title":"결제 API 타임아웃","summary":"p99 latency on checkout"}`),
		Channel:   "C0INC42",
		Private:   true,
		CreatedBy: "U1",
		UpdatedBy: "U1",
		CreatedAt: at(10),
		UpdatedAt: at(10),
	}
}

func putTeamCase(t *testing.T, s store.Store, c store.TeamCase) store.TeamCase {
	t.Helper()
	got, err := s.PutTeamCase(t.Context(), c)
	if err != nil {
		t.Fatalf("PutTeamCase(%s): %v", c.ID, err)
	}
	return got
}

func teamCasesVersion(t *testing.T, s store.Store) int64 {
	t.Helper()
	v, err := s.TeamCasesVersion(t.Context())
	if err != nil {
		t.Fatalf("TeamCasesVersion: %v", err)
	}
	return v
}

func mustTeamCases(t *testing.T, s store.Store) []store.TeamCase {
	t.Helper()
	got, err := s.TeamCases(t.Context())
	if err != nil {
		t.Fatalf("TeamCases: %v", err)
	}
	return got
}

func teamCaseIDs(cs []store.TeamCase) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func testTeamCaseRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	if v := teamCasesVersion(t, s); v != 0 {
		t.Errorf("TeamCasesVersion of a new store = %d, want 0", v)
	}
	if got := mustTeamCases(t, s); got != nil {
		t.Errorf("TeamCases of a new store = %+v, want nil", got)
	}
	if _, ok, err := s.TeamCase(ctx, "team-none"); err != nil || ok {
		t.Errorf("TeamCase of a missing id = %v, %v; want false, nil", ok, err)
	}

	full := teamCase("team-b")
	bare := store.TeamCase{ID: "team-a", Case: []byte(`{}`)} // times from the store's clock
	gotFull, gotBare := putTeamCase(t, s, full), putTeamCase(t, s, bare)

	want := full
	want.CreatedAt, want.UpdatedAt, want.Version = full.CreatedAt.UTC(), full.UpdatedAt.UTC(), gotFull.Version
	if !reflect.DeepEqual(gotFull, want) {
		t.Errorf("PutTeamCase returned\\n%+v\\nwant\\n%+v", gotFull, want)
	}
	now := Clock(t).Now()
	if !gotBare.CreatedAt.Equal(now) || !gotBare.UpdatedAt.Equal(now) {
		t.Errorf("a case put without times has CreatedAt %v, UpdatedAt %v; want the store's clock %v", gotBare.CreatedAt, gotBare.UpdatedAt, now)
	}
	if gotFull.Version <= 0 || gotBare.Version <= gotFull.Version {
		t.Errorf("versions of two puts = %d then %d, want positive and growing", gotFull.Version, gotBare.Version)
	}
	if v := teamCasesVersion(t, s); v != gotBare.Version {
		t.Errorf("TeamCasesVersion = %d, want the last put's %d", v, gotBare.Version)
	}

	got, ok, err := s.TeamCase(ctx, "team-b")
	if err != nil || !ok || !reflect.DeepEqual(got, gotFull) {
		t.Errorf("TeamCase(team-b) = %+v, %v, %v; want %+v", got, ok, err, gotFull)
	}
	for _, c := range []store.TeamCase{got, gotBare} {
		if c.CreatedAt.Location() != time.UTC || c.UpdatedAt.Location() != time.UTC {
			t.Errorf("team case %s times are not in UTC: %v, %v", c.ID, c.CreatedAt, c.UpdatedAt)
		}
	}
	all := mustTeamCases(t, s)
	if !reflect.DeepEqual(all, []store.TeamCase{gotBare, gotFull}) {
		t.Errorf("TeamCases =\\n%+v\\nwant both, by id", all)
	}
}

// testTeamCaseReplace: a put of an existing id replaces the case but keeps
// who first saved it and when, which decides who may delete it.
func testTeamCaseReplace(t *testing.T, s store.Store) {
	first := putTeamCase(t, s, teamCase("team-x"))
	edit := teamCase("team-x")
	edit.Case = []byte(`{"id":"team-x","title":"edited"}`)
	edit.Private, edit.Channel = false, "C0OTHER"
	edit.CreatedBy, edit.CreatedAt = "U2", at(999)
	edit.UpdatedBy, edit.UpdatedAt = "U2", at(500)
	got := putTeamCase(t, s, edit)
	if got.CreatedBy != "U1" || !got.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("after a replace, created by %s at %v; want the first put's U1 at %v", got.CreatedBy, got.CreatedAt, first.CreatedAt)
	}
	if got.UpdatedBy != "U2" || !got.UpdatedAt.Equal(at(500)) || !bytes.Equal(got.Case, edit.Case) || got.Private || got.Channel != "C0OTHER" {
		t.Errorf("after a replace, the row is %+v; want the edit's case, channel, sharing and updater", got)
	}
	if got.Version <= first.Version {
		t.Errorf("a replace left the version at %d (first put %d), want it raised", got.Version, first.Version)
	}
	all := mustTeamCases(t, s)
	if len(all) != 1 || !reflect.DeepEqual(all[0], got) {
		t.Errorf("TeamCases after a replace = %+v, want the one replaced row %+v", all, got)
	}
}

func testTeamCaseDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	putTeamCase(t, s, teamCase("team-1"))
	putTeamCase(t, s, teamCase("team-2"))
	before := teamCasesVersion(t, s)
	ok, err := s.DeleteTeamCase(ctx, "team-1")
	if err != nil || !ok {
		t.Fatalf("DeleteTeamCase(team-1) = %v, %v; want true", ok, err)
	}
	after := teamCasesVersion(t, s)
	if after <= before {
		t.Errorf("a delete left TeamCasesVersion at %d (before it %d), want it raised: replicas would keep the deleted case", after, before)
	}
	if ids := teamCaseIDs(mustTeamCases(t, s)); !slices.Equal(ids, []string{"team-2"}) {
		t.Errorf("TeamCases after the delete = %v, want [team-2]", ids)
	}
	if _, found, err := s.TeamCase(ctx, "team-1"); err != nil || found {
		t.Errorf("TeamCase of the deleted case = %v, %v; want false", found, err)
	}
	if ok, err := s.DeleteTeamCase(ctx, "team-1"); err != nil || ok {
		t.Errorf("deleting it again = %v, %v; want false, nil", ok, err)
	}
	if v := teamCasesVersion(t, s); v < after {
		t.Errorf("TeamCasesVersion went back from %d to %d", after, v)
	}
	// Put again after the delete: a new row, with a version past the delete's.
	again := putTeamCase(t, s, teamCase("team-1"))
	if again.Version <= after {
		t.Errorf("a put after the delete got version %d, want past %d", again.Version, after)
	}
}

func testTeamCaseRejected(t *testing.T, s store.Store) {
	noID := teamCase("")
	noCase := teamCase("team-empty")
	noCase.Case = nil
	for name, c := range map[string]store.TeamCase{"no id": noID, "no case": noCase} {
		if _, err := s.PutTeamCase(t.Context(), c); !errors.Is(err, store.ErrRejected) {
			t.Errorf("PutTeamCase with %s: err = %v, want ErrRejected", name, err)
		}
	}
	if v := teamCasesVersion(t, s); v != 0 {
		t.Errorf("refused puts raised TeamCasesVersion to %d, want 0", v)
	}
	if got := mustTeamCases(t, s); got != nil {
		t.Errorf("refused puts left %+v", got)
	}
}

// checkAllLanded checks that the n puts team-0 .. team-(n-1) all landed,
// each with a version of its own, and that the version is past them all.
func checkAllLanded(t *testing.T, s store.Store, n int, versions []int64) {
	t.Helper()
	all := mustTeamCases(t, s)
	if len(all) != n {
		t.Errorf("%d concurrent puts of different ids left %d cases, want all of them", n, len(all))
	}
	seen := map[int64]string{}
	for i, v := range versions {
		if prev, dup := seen[v]; dup {
			t.Errorf("team-%d and %s were both given version %d", i, prev, v)
		}
		seen[v] = fmt.Sprintf("team-%d", i)
	}
	if v, max := teamCasesVersion(t, s), slices.Max(versions); v < max {
		t.Errorf("TeamCasesVersion = %d after puts up to version %d", v, max)
	}
}

func testTeamCaseConcurrent(t *testing.T, s store.Store) {
	const n = 20
	versions := make([]int64, n)
	parallel(n, func(i int) {
		got, err := s.PutTeamCase(t.Context(), teamCase(fmt.Sprintf("team-%d", i)))
		if err != nil {
			t.Errorf("PutTeamCase %d: %v", i, err)
		}
		versions[i] = got.Version
	})
	checkAllLanded(t, s, n, versions)
}

// testTeamCasesFromTwoStores: two replicas saving different cases at the
// same instant both keep theirs, and each sees the other's.
func testTeamCasesFromTwoStores(t *testing.T, a, b store.Store) {
	const n = 20
	versions := make([]int64, n)
	parallel(n, func(i int) {
		s := a
		if i%2 == 1 {
			s = b
		}
		got, err := s.PutTeamCase(t.Context(), teamCase(fmt.Sprintf("team-%d", i)))
		if err != nil {
			t.Errorf("PutTeamCase %d: %v", i, err)
		}
		versions[i] = got.Version
	})
	checkAllLanded(t, a, n, versions)
	checkAllLanded(t, b, n, versions)
	if va, vb := teamCasesVersion(t, a), teamCasesVersion(t, b); va != vb {
		t.Errorf("the two stores read versions %d and %d of one database", va, vb)
	}
	if ok, err := b.DeleteTeamCase(t.Context(), "team-0"); err != nil || !ok {
		t.Fatalf("b deleting a's case = %v, %v; want true", ok, err)
	}
	if _, found, err := a.TeamCase(t.Context(), "team-0"); err != nil || found {
		t.Errorf("a still finds the case b deleted: %v, %v", found, err)
	}
}
