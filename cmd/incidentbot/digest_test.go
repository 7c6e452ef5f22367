package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/internal/slackfake"
	"github.com/incidentbot/incidentbot/store"
	"github.com/incidentbot/incidentbot/store/sqlite"
)

// seedWeek records a generated week of activity in a new SQLite file.
func seedWeek(t *testing.T, from time.Time) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "activity.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	kinds := []struct {
		sym, comp []string
		cases     []string
	}{
		{[]string{"crash-loop", "memory-exhaustion"}, []string{"kubernetes-nodes"}, []string{"zalando-2019-06-11"}},
		{[]string{"dns-resolution-failures"}, []string{"dns-resolver"}, []string{"facebook-2021-10-04"}},
		{[]string{"high-latency", "elevated-5xx-errors"}, []string{"cdn"}, []string{"cloudflare-2019-07-02", "fastly-2021-06-08"}},
	}
	ctx := context.Background()
	for i := range 60 {
		k := kinds[i%len(kinds)]
		if i%2 == 0 {
			k = kinds[0]
		}
		s := store.Suggestion{Key: fmt.Sprint("k", i), Time: from.Add(time.Duration(i) * 2 * time.Hour), Channel: fmt.Sprintf("C%d", i%4),
			Private: i%10 == 0, Source: store.SourceAlert, Lang: "en", Symptoms: k.sym, Components: k.comp}
		for _, c := range k.cases {
			s.Cases = append(s.Cases, store.ScoredCase{CaseID: c, Score: 0.7})
		}
		if err := st.RecordSuggestion(ctx, s); err != nil {
			t.Fatal(err)
		}
		if i%6 == 0 {
			vote := store.Helpful
			if i%12 == 0 {
				vote = store.NotRelevant
			}
			if _, err := st.RecordFeedback(ctx, store.Feedback{Time: s.Time, Channel: s.Channel, Message: fmt.Sprint(i), User: "U1", CaseID: k.cases[0], Vote: vote}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return path
}

func TestDigestPreview(t *testing.T) {
	db := seedWeek(t, time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC))
	code, out, errOut := runCmd(t, "", nil, "digest", "preview", "--db", db, "--week", "2026-W48")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Weekly incident digest, 2026-W48", "suggestions in 4 incident channels", "Symptoms seen most", "Crash", "Cases suggested most", "Case of the week"} {
		if !strings.Contains(out, want) {
			t.Errorf("preview lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCmd(t, "", nil, "digest", "preview", "--db", db, "--week", "2026-W48", "--lang", "ko", "--json")
	var payload struct {
		Text   string           `json:"text"`
		Blocks []map[string]any `json:"blocks"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &payload) != nil || !strings.Contains(payload.Text, "주간 장애 다이제스트") || len(payload.Blocks) < 4 {
		t.Errorf("Korean JSON preview: exit %d\n%.500s", code, out)
	}
	code, out, _ = runCmd(t, "", nil, "digest", "preview", "--db", db, "--week", "2026-W40")
	if code != 0 || !strings.Contains(out, "A quiet week") {
		t.Errorf("quiet week: exit %d\n%s", code, out)
	}
	code, _, errOut = runCmd(t, "", nil, "digest", "preview", "--db", db, "--week", "48")
	if code != 2 || !strings.Contains(errOut, "YYYY-Www") {
		t.Errorf("bad week: exit %d %s", code, errOut)
	}
}

func TestScheduledDigestLandsInChannel(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	fake.AddChannel("C0DIGEST", "sre-weekly", false)
	db := seedWeek(t, time.Now().Add(-6*24*time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		code, _, _ := func() (int, string, string) {
			var out, errOut strings.Builder
			e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(k string) string {
				return map[string]string{"SLACK_APP_TOKEN": "xapp-1", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_API_URL": fake.APIURL()}[k]
			}}
			return run(ctx, []string{"run", "--listen", "", "--db", db, "--digest", "C0DIGEST;@every 1s;ko"}, e), out.String(), errOut.String()
		}()
		done <- code
	}()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	c, err := fake.WaitCall(wctx, func(c slackfake.Call) bool { return c.Method == "chat.postMessage" && c.Channel == "C0DIGEST" })
	if err != nil {
		t.Fatalf("no digest posted: %v", err)
	}
	if c.ThreadTS != "" || !strings.Contains(c.Text, "주간 장애 다이제스트") {
		t.Errorf("digest posted as %q in thread %q", c.Text, c.ThreadTS)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("run exited %d", code)
	}
	n := 0
	for _, c := range fake.Calls("chat.postMessage") {
		if c.Channel == "C0DIGEST" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d digests posted for one week", n)
	}
}
