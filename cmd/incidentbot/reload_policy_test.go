package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// get returns the body of a GET to url.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// A reload that meets a broken case file keeps the whole previous library
// and says so: an ERROR log line, a counter, and the health probes; a reload
// after the fix takes the new library and clears them. A reload with the
// library unchanged reuses the index on disk instead of waiting on its lock.
func TestReloadKeepsPreviousLibraryWhenAFileIsBroken(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := startReloadableBot(t, ctx, "--listen", "127.0.0.1:0", "--index-dir", t.TempDir())
	dir, fake, reloadCh, logs, done := b.dir, b.fake, b.reload, b.logs, b.done
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	if err := fake.WaitConnected(wctx, 1); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	addr := regexp.MustCompile(`serving /healthz and /metrics" addr=(\S+)`).FindStringSubmatch(logs.String())
	if addr == nil {
		t.Fatalf("no address in the log:\n%s", logs)
	}
	base := "http://" + addr[1]
	// Each reload ends with one of these lines.
	const ok, failed = "case library reloaded", "reload failed; keeping the previous case library"
	reloads := 0
	reload := func(want string) string {
		t.Helper()
		reloads++
		reloadCh <- os.Interrupt
		line, err := waitReload(wctx, logs, reloads, ok, failed)
		if err != nil {
			t.Fatalf("reload %d did not finish: %v\n%s", reloads, err, logs)
		}
		if !strings.Contains(line, want) {
			t.Fatalf("reload %d: %q, want %q", reloads, line, want)
		}
		return line
	}

	// Unchanged library, index on disk: reopened, not waited on.
	reload(ok)

	// A new good case beside a broken file: nothing of the new files is
	// taken, the library keeps its one case.
	writeCase(t, dir, "team-oom", "The quasar API ran out of memory", "Pods OOMKilled, CrashLoopBackOff", `["crash-loop", "memory-exhaustion"]`, `["kubernetes-nodes"]`)
	if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"id": "team-broken", "title": `), 0o644); err != nil {
		t.Fatal(err)
	}
	line := reload(failed)
	for _, want := range []string{"level=ERROR", "cases=1", "broken"} {
		if !strings.Contains(line, want) {
			t.Errorf("failure line %q lacks %q", line, want)
		}
	}
	metrics := get(t, base+"/metrics")
	if !strings.Contains(metrics, "incidentbot_library_reload_failures_total 1") {
		t.Errorf("/metrics lacks one reload failure:\n%s", grepLines(metrics, "incidentbot_library"))
	}
	health := get(t, base+"/healthz/library")
	if !strings.Contains(health, "the last reload failed, the previous library is in use") {
		t.Errorf("/healthz/library = %q, want it to say the reload failed", health)
	}
	stamp := regexp.MustCompile(`(?m)^incidentbot_library_last_reload_success_timestamp_seconds (\S+)`).FindStringSubmatch(metrics)
	if stamp == nil {
		t.Fatalf("/metrics lacks the last successful reload:\n%s", grepLines(metrics, "incidentbot_library"))
	}

	// Fixed: the next reload takes both cases and clears the failure.
	if err := os.Remove(filepath.Join(dir, "broken.json")); err != nil {
		t.Fatal(err)
	}
	if line := reload(ok); !strings.Contains(line, "cases=2") {
		t.Errorf("reload after the fix: %q, want cases=2", line)
	}
	if health := get(t, base+"/healthz/library"); strings.TrimSpace(health) != "library: ok" {
		t.Errorf("/healthz/library after the fix = %q", health)
	}
	metrics = get(t, base+"/metrics")
	if again := regexp.MustCompile(`(?m)^incidentbot_library_last_reload_success_timestamp_seconds (\S+)`).FindStringSubmatch(metrics); again == nil || again[1] == stamp[1] {
		t.Errorf("the last successful reload was not updated: %v then %v", stamp, again)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d\n%s", code, logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop after the reloads")
	}
}

// waitReload waits until the log holds n lines with either ending and
// returns the nth of them.
func waitReload(ctx context.Context, w *logWatch, n int, endings ...string) (string, error) {
	for {
		w.mu.Lock()
		var found []string
		for _, l := range strings.Split(w.b.String(), "\n") {
			for _, e := range endings {
				if strings.Contains(l, e) {
					found = append(found, l)
					break
				}
			}
		}
		ch := w.changed
		w.mu.Unlock()
		if len(found) >= n {
			return found[n-1], nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
