package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/internal/pgtest"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/store"
	"github.com/incidentbot/incidentbot/store/postgres"
)

const oomText = "Pods OOMKilled and in CrashLoopBackOff: the quasar API ran out of memory"

// TestShowAndMatchTeamCases: show and match read the team cases only with
// --db, never from the store in the environment; a case kept to a private
// channel is neither shown nor matched, nor its id suggested, unless
// --channel names that channel.
func TestShowAndMatchTeamCases(t *testing.T) {
	db := filepath.Join(t.TempDir(), "a.db")
	showAndMatchTeamCases(t, db, openSQLite(t, db), map[string]string{"INCIDENTBOT_DB": db})
}

// TestShowAndMatchTeamCasesPostgres is TestShowAndMatchTeamCases with
// --db a postgres:// URL, DATABASE_URL set to it in the environment.
func TestShowAndMatchTeamCasesPostgres(t *testing.T) {
	url := pgtest.Schema(t, "teamcli")
	st, err := postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	showAndMatchTeamCases(t, url, st, map[string]string{"DATABASE_URL": url})
}

// showAndMatchTeamCases runs show and match over the store st, which --db
// db opens and environ names.
func showAndMatchTeamCases(t *testing.T, db string, st store.Store, environ map[string]string) {
	dir := diskLibrary(t)
	put(t, st, oomCase, certCase)
	lib := []string{"--builtin=false", "--cases", dir}

	show := func(extra ...string) (int, string) {
		t.Helper()
		code, out, errOut := runCmd(t, "", environ, append(append([]string{"show"}, lib...), extra...)...)
		return code, out + errOut
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in what it printed
	}{
		{"shared, without --db", []string{"team-oom"}, exitError, `no case "team-oom"`},
		{"shared, with --db", []string{"team-oom", "--db", db}, 0, "The quasar API ran out of memory"},
		{"private, with --db", []string{"team-cert", "--db", db}, exitError, `no case "team-cert"`},
		{"private, another channel", []string{"team-cert", "--db", db, "--channel", "C0INC"}, exitError, `no case "team-cert"`},
		{"private, its channel", []string{"team-cert", "--db", db, "--channel", "G0PRIV"}, 0, "Expired certificate on the quasar gateway"},
		{"--channel without --db", []string{"team-cert", "--channel", "G0PRIV"}, 2, "--channel goes with --db"},
	} {
		t.Run("show "+tc.name, func(t *testing.T) {
			code, out := show(tc.args...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", code, tc.code, tc.want, out)
			}
			if tc.code != 0 && strings.Contains(out, "quasar") {
				t.Errorf("a case not shown is revealed:\n%s", out)
			}
		})
	}
	// A near miss suggests the shared id, never the private one.
	if code, out := show("team-cer", "--db", db); code != exitError || strings.Contains(out, "team-cert") {
		t.Errorf("show team-cer: exit %d, suggests the private case:\n%s", code, out)
	}

	match := func(text string, extra ...string) ([]string, string) {
		t.Helper()
		args := append(append(append([]string{"match", "--json"}, lib...), extra...), text)
		code, out, errOut := runCmd(t, "", environ, args...)
		if code != 0 {
			t.Fatalf("match %v: exit %d: %s", extra, code, errOut)
		}
		var v matcher.View
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("match --json printed %q: %v", out, err)
		}
		var ids []string
		for _, r := range v.Results {
			ids = append(ids, r.ID)
		}
		return ids, out + errOut
	}
	if got, _ := match(oomText); slices.Contains(got, "team-oom") {
		t.Errorf("match without --db found team-oom: %v", got)
	}
	if got, _ := match(oomText, "--db", db); !slices.Contains(got, "team-oom") {
		t.Errorf("match --db did not find team-oom: %v", got)
	}
	for _, ch := range []string{"", "C0INC"} {
		args := []string{"--db", db}
		if ch != "" {
			args = append(args, "--channel", ch)
		}
		if got, out := match(certText, args...); slices.Contains(got, "team-cert") || strings.Contains(out, "Expired certificate") {
			t.Errorf("match %v reveals the private case: %v\n%s", args, got, out)
		}
	}
	if got, _ := match(certText, "--db", db, "--channel", "G0PRIV"); len(got) == 0 || got[0] != "team-cert" {
		t.Errorf("match --channel G0PRIV: %v, want team-cert first", got)
	}

	// Votes cast in the private channel on a shared case steer only a
	// match from that channel.
	for _, user := range []string{"U1", "U2"} {
		if _, err := st.RecordFeedback(t.Context(), store.Feedback{Time: time.Now().UTC(), Team: "T0OURS", Channel: "G0PRIV", Private: true,
			Message: "1.1", User: user, CaseID: "team-oom", Vote: store.Helpful, Query: oomText}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ch := range []string{"", "C0INC", "G0PRIV"} {
		args := []string{"--db", db, "--team", "T0OURS"}
		if ch != "" {
			args = append(args, "--channel", ch)
		}
		_, out := match(oomText, args...)
		if voted := strings.Contains(out, `"helpful":2`); voted != (ch == "G0PRIV") {
			t.Errorf("match %v: the private channel's votes count: %v, want %v\n%s", args, voted, ch == "G0PRIV", out)
		}
	}
	if code, _, errOut := runCmd(t, "", nil, append(append([]string{"match"}, lib...), "--channel", "G0PRIV", certText)...); code != 2 {
		t.Errorf("match --channel without --db: exit %d, want 2: %s", code, errOut)
	}
}
