package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/internal/slackfake"
)

// logWatch is a log writer a test can wait on.
type logWatch struct {
	mu      sync.Mutex
	b       strings.Builder
	changed chan struct{}
}

func newLogWatch() *logWatch { return &logWatch{changed: make(chan struct{})} }

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	close(w.changed)
	w.changed = make(chan struct{})
	return len(p), nil
}

func (w *logWatch) wait(ctx context.Context, substr string) error {
	for {
		w.mu.Lock()
		if strings.Contains(w.b.String(), substr) {
			w.mu.Unlock()
			return nil
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

const teamCase = `{"id": "%s", "org": "Quasar", "date": "2025-01-02", "title": {"en": "%s", "ko": ""},
  "symptoms_text": {"en": "%s", "ko": ""}, "symptoms": %s, "components": %s, "root_cause": "software-bug",
  "remediation": [{"text": {"en": "Rolled back", "ko": "롤백했다"}}], "sources": [{"url": "https://example.com/%s", "kind": "official-postmortem", "archived": null}]}`

func writeCase(t *testing.T, dir, id, title, text, sym, comp string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, id+".json"), caseJSON(id, title, text, sym, comp), 0o644); err != nil {
		t.Fatal(err)
	}
}

// diskLibrary is a library folder of one case file, team-disk: a disk
// filled on the quasar hosts.
func diskLibrary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeCase(t, dir, "team-disk", "Disk filled on the quasar hosts", "No space left on device on /var", `["disk-full"]`, `["vm-compute"]`)
	return dir
}

// caseJSON is a case in the Incident Library format.
func caseJSON(id, title, text, sym, comp string) []byte {
	out := strings.NewReplacer("%s", "\x00").Replace(teamCase)
	for _, v := range []string{id, title, text, sym, comp, id} {
		out = strings.Replace(out, "\x00", v, 1)
	}
	return []byte(out)
}

// reloadableBot is `incidentbot run` in this process, over a directory of
// team cases that starts with one disk-full case, against a fake Slack with
// one incident channel, reloaded by sending on reload.
type reloadableBot struct {
	dir    string
	fake   *slackfake.Server
	reload chan os.Signal
	logs   *logWatch
	done   chan int // run's exit code
}

// startReloadableBot starts the bot with args added to its command line; it
// stops when ctx ends, and the fake Slack closes when t ends.
func startReloadableBot(t *testing.T, ctx context.Context, args ...string) *reloadableBot {
	t.Helper()
	b := &reloadableBot{dir: diskLibrary(t), fake: slackfake.New(), reload: make(chan os.Signal, 1), logs: newLogWatch(), done: make(chan int, 1)}
	t.Cleanup(b.fake.Close)
	b.fake.AddChannel("C0INC", "inc-quasar", false)
	envs := map[string]string{"SLACK_APP_TOKEN": "xapp-1", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_API_URL": b.fake.APIURL()}
	args = append([]string{"run", "--builtin=false", "--cases", b.dir, "--db", filepath.Join(t.TempDir(), "a.db")}, args...)
	go func() {
		b.done <- run(ctx, args, env{stdin: strings.NewReader(""), stdout: b.logs, stderr: b.logs,
			getenv: func(k string) string { return envs[k] }, reload: b.reload})
	}()
	return b
}

func TestReloadSwapsLibraryWithoutRestart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := startReloadableBot(t, ctx, "--listen", "")
	dir, fake, reloadCh, logs, done := b.dir, b.fake, b.reload, b.logs, b.done
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := fake.WaitConnected(wctx, 1); err != nil {
		t.Fatal(err)
	}
	alert := func(ts string) map[string]any {
		return alertEvent("C0INC", ts, "[FIRING:1] KubePodCrashLooping quasar-api-"+ts, "pods OOMKilled and in CrashLoopBackOff")
	}
	// Before the reload the library has no case for this alert: a later
	// disk alert in the same lane proves the first was handled unanswered.
	fake.SendEvent(alert("1700000001.000100"))
	disk := map[string]any{"type": "message", "user": "U1", "text": "No space left on device on /var, disk full on quasar-3",
		"channel": "C0INC", "channel_type": "channel", "ts": "1700000002.000100"}
	fake.SendEvent(disk)
	if _, err := fake.WaitCall(wctx, func(c slackfake.Call) bool { return c.ThreadTS == "1700000002.000100" }); err != nil {
		t.Fatalf("disk alert not answered: %v\n%s", err, logs)
	}
	writeCase(t, dir, "team-oom", "The quasar API ran out of memory and crash looped", "Pods OOMKilled, CrashLoopBackOff", `["crash-loop", "memory-exhaustion"]`, `["kubernetes-nodes"]`)
	reloadCh <- os.Interrupt
	if err := logs.wait(wctx, "case library reloaded"); err != nil {
		t.Fatalf("no reload: %v\n%s", err, logs)
	}
	fake.SendEvent(alert("1700000003.000100"))
	c, err := fake.WaitCall(wctx, func(c slackfake.Call) bool { return c.ThreadTS == "1700000003.000100" })
	if err != nil {
		t.Fatalf("alert after reload not answered: %v\n%s", err, logs)
	}
	if !strings.Contains(c.Text, "quasar API ran out of memory") {
		t.Errorf("answered with %q", c.Text)
	}
	for _, call := range fake.Calls("chat.postMessage") {
		if call.ThreadTS == "1700000001.000100" {
			t.Error("the alert before the reload was answered from a library without a case for it")
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d\n%s", code, logs)
	}
}
