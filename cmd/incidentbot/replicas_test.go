package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/internal/pgtest"
	"github.com/incidentbot/incidentbot/internal/slackfake"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// binary builds the incidentbot binary once for the tests that run it.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "incidentbot-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "incidentbot")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// syncBuffer is a log buffer safe for a process's writes and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// alertText is an alert that clears the floor against the built-in library;
// name makes each alert distinct (the fingerprint ignores digits).
func alertText(i int) (title, text string) {
	name := string(rune('a'+i%26)) + string(rune('a'+(i/26)%26)) + string(rune('a'+(i/676)%26))
	kinds := []struct{ title, text string }{
		{"KubePodCrashLooping", "pod is in CrashLoopBackOff, last state OOMKilled, exit code 137"},
		{"CoreDNSErrorsHigh", "SERVFAIL and NXDOMAIN for internal names; DNS resolution failing across the cluster"},
		{"SSLCertExpired", "x509: certificate has expired; TLS handshakes fail for every client"},
		{"HighErrorRate", "502 Bad Gateway from the load balancer for 14% of requests; p99 latency 4s"},
	}
	k := kinds[i%len(kinds)]
	return fmt.Sprintf("[FIRING:1] %s (svc-%s)", k.title, name), k.text
}

// TestThreeReplicas runs three bot processes against one fake Slack (three
// Socket Mode connections, envelopes spread between them, some redelivered
// to another connection) and one PostgreSQL: every alert gets exactly one
// reply, also when a message in its thread reaches another replica at the
// same moment; chatter gets none; the three schedulers post one digest; and
// killing a replica mid-stream loses no event. Replies are counted after
// every replica drained its queue and exited.
func TestThreeReplicas(t *testing.T) {
	dbURL := pgtest.Schema(t, "replicas")
	bin := binary(t)
	fake := slackfake.New()
	defer fake.Close()
	const channels = 10
	for i := range channels {
		fake.AddChannel(fmt.Sprintf("C0INC%02d", i), fmt.Sprintf("inc-%02d", i), false)
	}
	fake.AddChannel("C0DIGEST", "sre-weekly", false)

	var procs []*exec.Cmd
	var logs []*syncBuffer
	index := builtinIndexCopy(t) // one --index-dir for the three, opened by each at once
	for i := range 3 {
		cmd := exec.Command(bin, "run", "--listen", "", "--inbox-lease", "3s", "--digest", "C0DIGEST;@every 1s")
		cmd.Env = append(os.Environ(), "SLACK_APP_TOKEN=xapp-1", "SLACK_BOT_TOKEN=xoxb-1", "SLACK_API_URL="+fake.APIURL(),
			"DATABASE_URL="+dbURL, fmt.Sprintf("INCIDENTBOT_REPLICA=replica-%d", i+1), "INCIDENTBOT_INDEX_DIR="+index)
		lb := &syncBuffer{}
		cmd.Stderr = lb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		logs = append(logs, lb)
	}
	var stopOnce sync.Once
	stopAll := func() {
		stopOnce.Do(func() {
			for i, p := range procs {
				if i == 1 {
					continue // killed below
				}
				p.Process.Signal(syscall.SIGTERM)
				if err := p.Wait(); err != nil {
					t.Errorf("replica %d did not exit cleanly on SIGTERM: %v", i+1, err)
				}
			}
		})
	}
	defer func() {
		stopAll()
		if t.Failed() {
			for i, l := range logs {
				t.Logf("replica %d:\n%s", i+1, l)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := fake.WaitConnected(ctx, 3); err != nil {
		t.Fatalf("three replicas did not connect: %v", err)
	}

	start := time.Now()
	type sent struct {
		env, channel, ts string
		alert            bool
	}
	var events []sent
	alerts, followups := 0, 0
	for i := range 240 {
		ch := fmt.Sprintf("C0INC%02d", i%channels)
		ts := fmt.Sprintf("1732%06d.000100", i)
		var ev map[string]any
		if i%2 == 0 {
			title, text := alertText(alerts)
			alerts++
			ev = map[string]any{"type": "message", "subtype": "bot_message", "bot_id": "B0ALERTS", "text": "", "channel": ch,
				"channel_type": "channel", "ts": ts, "attachments": []any{map[string]any{"title": title, "text": text}}}
		} else {
			ev = map[string]any{"type": "message", "user": "U0PERSON", "text": "thanks, looking", "channel": ch, "channel_type": "channel", "ts": ts}
		}
		events = append(events, sent{env: fake.SendEvent(ev), channel: ch, ts: ts, alert: i%2 == 0})
		if i%2 == 0 && (alerts-1)%4 != 2 {
			// A message in the alert's thread, at the same moment: the
			// round-robin sends it to the next replica, which races the
			// first to post the thread's reply.
			fts := fmt.Sprintf("1732%06d.000200", i)
			fev := map[string]any{"type": "message", "user": "U0ONCALL", "channel": ch, "channel_type": "channel", "ts": fts, "thread_ts": ts,
				"text": "still in CrashLoopBackOff here, the pod was OOMKilled again with exit code 137"}
			events = append(events, sent{env: fake.SendEvent(fev), channel: ch, ts: fts})
			followups++
		}
		if i%4 == 1 {
			// Slack retries after a timeout, possibly to another connection.
			events = append(events, sent{env: fake.Redeliver(events[len(events)-2].env), channel: ch, ts: events[len(events)-2].ts})
		}
		if i == 150 {
			// Kill a replica mid-stream: what it acked but did not handle
			// must be taken over, what it never acked Slack redelivers.
			procs[1].Process.Kill()
			procs[1].Wait()
		}
	}
	if len(events) != 300+followups {
		t.Fatalf("sent %d events, want %d", len(events), 300+followups)
	}
	// Slack redelivers what was not acked within its timeout, until it is.
	redelivered := 0
	for round := 0; ; round++ {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		var unacked []int
		for i := range events {
			if _, err := fake.WaitAck(rctx, events[i].env); err != nil {
				unacked = append(unacked, i)
			}
		}
		rcancel()
		if len(unacked) == 0 {
			break
		}
		if round == 5 {
			t.Fatalf("%d envelopes never acked after %d rounds of redelivery", len(unacked), round)
		}
		for _, i := range unacked {
			events[i].env = fake.Redeliver(events[i].env)
			redelivered++
		}
	}
	// Every alert gets its reply.
	for _, e := range events {
		if !e.alert {
			continue
		}
		if _, err := fake.WaitCall(ctx, func(c slackfake.Call) bool {
			return c.Method == "chat.postMessage" && c.Channel == e.channel && c.ThreadTS == e.ts
		}); err != nil {
			t.Fatalf("alert %s in %s never answered: %v", e.ts, e.channel, err)
		}
	}
	elapsed := time.Since(start)
	// The quiet period: every envelope is acked; the replicas drain their
	// queues and exit, so nothing can be posted after the count.
	stopAll()
	replies := map[string]int{}
	for _, c := range fake.Calls("chat.postMessage") {
		if strings.HasPrefix(c.Channel, "C0INC") {
			replies[c.Channel+"/"+c.ThreadTS]++
		}
	}
	for k, n := range replies {
		if n != 1 {
			t.Errorf("thread %s got %d replies", k, n)
		}
	}
	if len(replies) != alerts {
		t.Errorf("%d threads answered, want %d (one per alert, none for chatter)", len(replies), alerts)
	}
	digests := 0
	for _, c := range fake.Calls("chat.postMessage") {
		if c.Channel == "C0DIGEST" {
			digests++
		}
	}
	if digests != 1 {
		t.Errorf("%d digests posted by three schedulers for one week, want 1", digests)
	}
	taken := 0
	for _, l := range logs {
		taken += strings.Count(l.String(), "taking over an event")
	}
	t.Logf("%d events (%d alerts, %d with a message in their thread at once) over 3 replicas, one killed: %d replies, %d envelopes redelivered after the kill, %d events taken over from the killed replica, %d digest; all answered in %v",
		len(events), alerts, followups, len(replies), redelivered, taken, digests, elapsed.Round(time.Millisecond))
}
