package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/store"
	"github.com/incidentbot/incidentbot/store/sqlite"
)

// TestMatchWithVotes: `match` ranks as it always did unless given --db,
// even with a store holding votes in the environment; with --db and
// --team, the workspace's votes on similar texts steer it and are shown.
func TestMatchWithVotes(t *testing.T) {
	const text = "Triggered: [P1] refund-api 5xx rate above 5%\nPostgres connections at max_connections; " +
		"FATAL: remaining connection slots are reserved for non-replication superuser connections in refund-api logs since the 14:05 deploy. p99 latency 8s."
	lib := []string{"--cases", "../../matcher/testdata/library", "--builtin=false"}
	match := func(environ map[string]string, extra ...string) ([]matcher.ResultView, int, string) {
		t.Helper()
		args := append(append([]string{"match", "--json"}, lib...), extra...)
		code, out, errOut := runCmd(t, "", environ, append(args, text)...)
		var v matcher.View
		if code == 0 {
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("match --json printed %q: %v", out, err)
			}
		}
		return v.Results, code, errOut
	}
	ids := func(rs []matcher.ResultView) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}

	base, code, errOut := match(nil)
	if code != 0 || len(base) < 2 {
		t.Fatalf("match: exit %d, %v: %s", code, ids(base), errOut)
	}
	db := filepath.Join(t.TempDir(), "activity.db")
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"U1", "U2"} {
		if _, err := st.RecordFeedback(context.Background(), store.Feedback{Time: time.Now().UTC(), Team: "T0OURS", Channel: "C1",
			Message: "1.1", User: user, CaseID: base[0].ID, Vote: store.NotRelevant, Query: text}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	environ := map[string]string{"INCIDENTBOT_DB": db}
	if got, code, errOut := match(environ); code != 0 || !slices.Equal(ids(got), ids(base)) {
		t.Errorf("without --db, with a store in the environment: exit %d, %v, want %v: %s", code, ids(got), ids(base), errOut)
	}
	got, code, errOut := match(nil, "--db", db, "--team", "T0OURS")
	if code != 0 || len(got) == 0 || got[0].ID == base[0].ID {
		t.Fatalf("with the votes: exit %d, %v; want %s out of the lead: %s", code, ids(got), base[0].ID, errOut)
	}
	for _, r := range got {
		if r.ID == base[0].ID && (r.Votes == nil || r.Votes.NotRelevant != 2) {
			t.Errorf("the voted case reports votes %+v, want 2 not relevant", r.Votes)
		}
	}
	if got, code, _ := match(nil, "--db", db, "--team", "T0OTHER"); code != 0 || !slices.Equal(ids(got), ids(base)) {
		t.Errorf("another workspace's votes steered: %v, want %v", ids(got), ids(base))
	}
	if got, code, errOut := match(nil, "--db", db); code != 0 || !slices.Equal(ids(got), ids(base)) {
		t.Errorf("--db without --team (team cases, no votes): exit %d, %v, want %v: %s", code, ids(got), ids(base), errOut)
	}
	if _, code, errOut := match(nil, "--team", "T0OURS"); code != 2 {
		t.Errorf("--team without --db: exit %d, want 2: %s", code, errOut)
	}
	if _, code, errOut := match(nil, "--db", filepath.Join(t.TempDir(), "none.db"), "--team", "T0OURS"); code != 1 {
		t.Errorf("--db at no store: exit %d, want 1: %s", code, errOut)
	}
}
