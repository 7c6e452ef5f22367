package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/internal/slackfake"
)

// Listening beyond loopback without a token stops serve and run at start,
// saying what to set.
func TestAPIBeyondLoopbackNeedsToken(t *testing.T) {
	slack := map[string]string{"SLACK_APP_TOKEN": "xapp-1", "SLACK_BOT_TOKEN": "xoxb-1"}
	for _, args := range [][]string{{"serve", "--addr", "0.0.0.0:0"}, {"serve", "--addr", ":8088"}, {"run", "--api-addr", ":0", "--listen", ""}} {
		code, _, errOut := runCmd(t, "", slack, args...)
		if code != exitUsage || !strings.Contains(errOut, "INCIDENTBOT_API_TOKEN") {
			t.Errorf("%v: exit %d, %q; want 2 naming INCIDENTBOT_API_TOKEN", args, code, errOut)
		}
	}
	code, _, errOut := runCmd(t, "", nil, "serve", "--public-url", "ftp://x")
	if code != exitUsage || !strings.Contains(errOut, "--public-url") {
		t.Errorf("a bad --public-url: exit %d, %q", code, errOut)
	}
}

var apiAddr = regexp.MustCompile(`msg="serving the API, MCP and the library page" addr=(\S+)`)

// apiBase waits for run to log that it serves the API and returns the
// API's base URL, from the address in that line.
func apiBase(ctx context.Context, t *testing.T, logs *logWatch) string {
	t.Helper()
	if err := logs.wait(ctx, "serving the API"); err != nil {
		t.Fatalf("the API did not start: %v\n%s", err, logs)
	}
	m := apiAddr.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no API address in the log:\n%s", logs)
	}
	return "http://" + m[1]
}

// run --api-addr serves the library the bot answers from, swaps it with
// the bot's on reload, and the bot's replies link to the library page.
func TestRunServesAPIBesideTheBot(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := startReloadableBot(t, ctx, "--listen", "", "--api-addr", "127.0.0.1:0", "--public-url", "https://incidents.example.com")
	dir, fake, reloadCh, logs, done := b.dir, b.fake, b.reload, b.logs, b.done
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	base := apiBase(wctx, t, logs)
	getCase := func(id string) (int, map[string]any) {
		resp, err := http.Get(base + "/api/v1/cases/" + id)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	if code, v := getCase("team-disk"); code != 200 || v["page"] != "https://incidents.example.com/cases/team-disk" {
		t.Errorf("team-disk: %d %v", code, v)
	}
	if code, _ := getCase("team-oom"); code != 404 {
		t.Errorf("team-oom before it exists: %d", code)
	}

	if err := fake.WaitConnected(wctx, 1); err != nil {
		t.Fatal(err)
	}
	fake.SendEvent(map[string]any{"type": "message", "user": "U1", "text": "No space left on device on /var, disk full on quasar-3",
		"channel": "C0INC", "channel_type": "channel", "ts": "1700000002.000100"})
	c, err := fake.WaitCall(wctx, func(c slackfake.Call) bool { return c.ThreadTS == "1700000002.000100" })
	if err != nil {
		t.Fatalf("not answered: %v\n%s", err, logs)
	}
	blocks, _ := json.Marshal(c.Blocks)
	if !strings.Contains(string(blocks), "https://incidents.example.com/cases/team-disk|") {
		t.Errorf("the reply does not link to the library page:\n%s", blocks)
	}

	writeCase(t, dir, "team-oom", "The quasar API ran out of memory and crash looped", "Pods OOMKilled, CrashLoopBackOff", `["crash-loop", "memory-exhaustion"]`, `["kubernetes-nodes"]`)
	reloadCh <- os.Interrupt
	if err := logs.wait(wctx, "case library reloaded"); err != nil {
		t.Fatalf("no reload: %v\n%s", err, logs)
	}
	if code, v := getCase("team-oom"); code != 200 || v["title"] != "The quasar API ran out of memory and crash looped" {
		t.Errorf("the API does not serve the reloaded library: %d %v", code, v)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d\n%s", code, logs)
	}
}

// serve answers with the team's taxonomy overlay: its ids are in the
// vocabulary, filter the listing and label the cases.
func TestServeUsesTaxonomyOverlay(t *testing.T) {
	overlay := filepath.Join("..", "..", "cases", "testdata", "overlay", "team.yaml")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "fh.yaml"), []byte(`id: fernhollow-2025-03-02
title: Orders writes stalled behind a lock held by a migration
date: 2025-03-02
summary: A schema migration on the orders database held a table lock for twelve minutes.
symptoms: [high-latency]
components: [orders-db]
`), 0o644)
	logs := newLogWatch()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--taxonomy", overlay, "--cases", dir},
			env{stdin: strings.NewReader(""), stdout: logs, stderr: logs, getenv: func(string) string { return "" }})
	}()
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	base := apiBase(wctx, t, logs)
	getJSON := func(path string, v any) int {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(v)
		return resp.StatusCode
	}
	var vocab struct{ Components []struct{ ID, Label string } }
	if code := getJSON("/api/v1/vocab", &vocab); code != 200 || !strings.Contains(fmt.Sprint(vocab.Components), "orders-db") {
		t.Errorf("vocab: %d, no orders-db in %v", code, vocab.Components)
	}
	var page struct{ Cases []struct{ ID string } }
	if code := getJSON("/api/v1/cases?component=orders-db", &page); code != 200 || len(page.Cases) != 1 || page.Cases[0].ID != "fernhollow-2025-03-02" {
		t.Errorf("listing by the overlay's component: %d %+v", code, page)
	}
	var c struct{ Components []struct{ ID, Label string } }
	if code := getJSON("/api/v1/cases/fernhollow-2025-03-02", &c); code != 200 || len(c.Components) != 1 || c.Components[0].Label == "orders-db" {
		t.Errorf("the case's component is not labelled from the overlay: %d %+v", code, c)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d\n%s", code, logs)
	}
}
