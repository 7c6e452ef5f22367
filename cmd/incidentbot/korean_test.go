package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/incidentbot/incidentbot/internal/pgtest"
	"github.com/incidentbot/incidentbot/internal/slackfake"
	"github.com/incidentbot/incidentbot/store/postgres"
)

// TestKoreanVoteAtTheCutStored: a Korean alert longer than the thread text
// the bot keeps (16 KiB) is cut where a syllable's bytes are split; the vote
// on the reply, which carries that text, must still reach PostgreSQL.
func TestKoreanVoteAtTheCutStored(t *testing.T) {
	dbURL := pgtest.Schema(t, "korean")
	fake := slackfake.New()
	defer fake.Close()
	fake.AddChannel("C0INC", "inc-pay", false)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := newLogWatch()
	envs := map[string]string{"SLACK_APP_TOKEN": "xapp-1", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_API_URL": fake.APIURL(), "DATABASE_URL": dbURL}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"run", "--listen", "", "--db", filepath.Join(t.TempDir(), "unused.db")},
			env{stdin: strings.NewReader(""), stdout: logs, stderr: logs, getenv: func(k string) string { return envs[k] }})
	}()
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	if err := fake.WaitConnected(wctx, 1); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}

	// The last 16 KiB of the thread's text ("\n" + " x" + 가…) start 1 byte
	// into a 3-byte syllable.
	text := "결제 API 커넥션 풀 고갈로 타임아웃, DB connection pool exhausted\n" + strings.Repeat("가", 6000) + " x"
	ts := "1700000001.000100"
	fake.SendEvent(map[string]any{"type": "message", "user": "U0ONCALL", "text": text, "channel": "C0INC", "channel_type": "channel", "ts": ts})
	reply, err := fake.WaitCall(wctx, func(c slackfake.Call) bool { return c.Method == "chat.postMessage" && c.ThreadTS == ts })
	if err != nil {
		t.Fatalf("not answered: %v\n%s", err, logs)
	}
	blocks, _ := json.Marshal(reply.Blocks)
	m := regexp.MustCompile(`case:([^:"]+):actions`).FindSubmatch(blocks)
	if m == nil {
		t.Fatalf("reply has no feedback buttons:\n%s", blocks)
	}
	caseID := string(m[1])
	fake.SendInteractive(map[string]any{
		"type":      "block_actions",
		"user":      map[string]any{"id": "U0VOTER"},
		"channel":   map[string]any{"id": "C0INC"},
		"container": map[string]any{"type": "message", "message_ts": reply.TS, "channel_id": "C0INC"},
		"message":   map[string]any{"type": "message", "ts": reply.TS, "thread_ts": ts, "text": reply.Text, "blocks": reply.Blocks},
		"actions":   []any{map[string]any{"type": "button", "action_id": "feedback_helpful", "value": caseID, "block_id": "case:" + caseID + ":actions"}},
	})
	if _, err := fake.WaitCall(wctx, func(c slackfake.Call) bool { return c.Method == "chat.update" && c.TS == reply.TS }); err != nil {
		t.Fatalf("vote not acknowledged: %v\n%s", err, logs)
	}
	cancel() // the buffered writes are flushed before run returns
	if code := <-done; code != 0 {
		t.Fatalf("exit %d\n%s", code, logs)
	}

	st, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.Feedback(context.Background(), time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d votes stored, want 1\n%s", len(got), logs)
	}
	q := got[0].Query
	if !utf8.ValidString(q) || strings.ContainsRune(q, utf8.RuneError) || !strings.HasSuffix(strings.TrimSpace(q), "가가 x") || len(q) > 16<<10 {
		t.Errorf("stored query (%d bytes) is not the thread's last 16 KiB cut between syllables: …%q", len(q), []rune(q)[max(0, utf8.RuneCountInString(q)-8):])
	}
}
