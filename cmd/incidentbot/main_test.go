package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/internal/slackfake"
)

// runCmd runs the program in-process and returns its exit code and output.
func runCmd(t *testing.T, stdin string, environ map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	e := env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut, getenv: func(k string) string { return environ[k] }}
	code := run(context.Background(), args, e)
	return code, out.String(), errOut.String()
}

func TestMatchText(t *testing.T) {
	code, out, errOut := runCmd(t, "", nil, "match", "x509: certificate has expired and TLS handshakes fail for every client")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Signals:", "1. ", "What they did:", "Lesson:", "Source: http"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestMatchVagueStatusUpdate: a provider's first status update names a
// service and no symptom; the signals give the symptom the model finds
// likeliest, by its label alone (no words of the text gave it), never as
// an empty quotation.
func TestMatchVagueStatusUpdate(t *testing.T) {
	code, out, errOut := runCmd(t, "", nil, "match", "We are investigating an issue affecting Cloud SQL instances in europe-west2.")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	first, _, _ := strings.Cut(out, "\n")
	if !strings.Contains(first, "symptoms: ") {
		t.Errorf("no symptom among the signals: %q", first)
	}
	if strings.Contains(out, `("")`) {
		t.Errorf("a signal quotes no words:\n%s", out)
	}
}

func TestMatchKoreanAnswersInKorean(t *testing.T) {
	code, out, _ := runCmd(t, "", nil, "match", "인증서가 만료되어 TLS 핸드셰이크가 실패합니다")
	if code != 0 || !strings.Contains(out, "감지한 신호") || !strings.Contains(out, "교훈") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestMatchJSONSchema(t *testing.T) {
	code, out, errOut := runCmd(t, "", nil, "match", "--json", "--top", "2", "pods OOMKilled and restarting in CrashLoopBackOff")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"language", "symptoms", "components", "results"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %q in %s", k, out)
		}
	}
	results := got["results"].([]any)
	if len(results) == 0 || len(results) > 2 {
		t.Fatalf("%d results for --top 2", len(results))
	}
	for _, r := range results {
		for _, k := range []string{"id", "title", "score", "symptoms", "components", "terms"} {
			if _, ok := r.(map[string]any)[k]; !ok {
				t.Errorf("result lacks %q: %v", k, r)
			}
		}
	}
}

func TestMatchStdinAndChatter(t *testing.T) {
	code, out, _ := runCmd(t, "thanks everyone, good night", nil, "match", "--json")
	if code != 0 || !strings.Contains(out, `"results":[]`) {
		t.Errorf("chatter: exit %d, %s", code, out)
	}
	code, _, errOut := runCmd(t, "  \n", nil, "match")
	if code != 2 || !strings.Contains(errOut, "no text to match") {
		t.Errorf("empty input: exit %d, %s", code, errOut)
	}
}

func TestMatchBatch(t *testing.T) {
	in := `{"id": "a", "text": "DNS lookups failing with SERVFAIL across the cluster"}
not json
{"id": 7, "text": "thanks"}
{"id": "b"}
`
	code, out, _ := runCmd(t, in, nil, "match", "--batch")
	if code != 1 {
		t.Errorf("exit %d, want 1 for a batch with bad lines", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d output lines for 4 input lines:\n%s", len(lines), out)
	}
	// Every answer, to a bad line too, is one JSON object.
	answers := make([]map[string]any, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &answers[i]); err != nil {
			t.Fatalf("line %d of the output is not JSON (%v): %s", i+1, err, l)
		}
	}
	first, third := answers[0], answers[2]
	if results, _ := first["results"].([]any); first["id"] != "a" || len(results) == 0 {
		t.Errorf("line 1: %s", lines[0])
	}
	if !strings.Contains(lines[1], `"error":"line 2`) || !strings.Contains(lines[3], `"id":"b"`) || !strings.Contains(lines[3], "no \\\"text\\\"") {
		t.Errorf("bad lines answered with:\n%s\n%s", lines[1], lines[3])
	}
	if third["id"] != float64(7) {
		t.Errorf("line 3 id %v", third["id"])
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"match", "--top", "0", "x"}, {"match", "--batch", "text"}, {"show"}, {"show", "x", "--lang", "fr"}, {"cases"}, {"cases", "burn"}, {"match", "--nope"}} {
		code, _, errOut := runCmd(t, "", nil, args...)
		if code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

func TestShowAndCases(t *testing.T) {
	code, out, _ := runCmd(t, "", nil, "cases", "list", "--json")
	if code != 0 {
		t.Fatalf("cases list: exit %d", code)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) < 250 {
		t.Fatalf("cases list --json: %d cases, %v", len(list), err)
	}
	id := list[0]["id"].(string)
	code, out, _ = runCmd(t, "", nil, "show", id, "--lang", "ko")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "요약") {
		t.Errorf("show: exit %d\n%s", code, out)
	}
	code, _, errOut := runCmd(t, "", nil, "show", "no-such-case")
	if code != 1 || !strings.Contains(errOut, "cases list") {
		t.Errorf("show unknown: exit %d %s", code, errOut)
	}
	code, out, _ = runCmd(t, "", nil, "cases", "stats")
	if code != 0 || !strings.Contains(out, "symptoms (42 ids)") || !strings.Contains(out, "organisations") {
		t.Errorf("stats: exit %d\n%.300s", code, out)
	}
	code, out, _ = runCmd(t, "", nil, "cases", "validate")
	if code != 0 || !strings.Contains(out, "0 errors") {
		t.Errorf("validate built-in: exit %d\n%s", code, out)
	}
}

func TestValidateReportsProblems(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"id": "x", "title": {"en": "t"}, "summary": {"en": "s"}, "date": "soon"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("id: [\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "ok.yaml"), []byte("id: ok\ntitle: {en: fine}\nsummary: {en: a disk filled}\ndate: 2024-01-01\nsymptoms: [disk-full, made-up]\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# Disk filled\n"), 0o644)
	code, out, _ := runCmd(t, "", nil, "cases", "validate", dir)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"bad.json:1:59: error: case x: date:", "broken.yaml:", "ok.yaml:5:23: warning: case ok: symptoms[1]: \"made-up\"",
		"notes.md: skipped: a document, not a case file: turn it into one with: incidentbot cases import", "1 case loaded; 2 errors, 1 warning; 1 file skipped"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Team cases load beside the built-in ones, and their problems are
	// reported without stopping the match.
	code, _, errOut := runCmd(t, "", nil, "match", "--cases", dir, "disk full on the database host")
	if code != 0 || !strings.Contains(errOut, "cases validate") {
		t.Errorf("match with bad team cases: exit %d, %s", code, errOut)
	}
}

func TestRunNeedsTokens(t *testing.T) {
	code, _, errOut := runCmd(t, "", map[string]string{"SLACK_BOT_TOKEN": "xoxb-secret"}, "run", "--listen", "")
	if code != 1 || !strings.Contains(errOut, "SLACK_APP_TOKEN is not set") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	code, _, errOut = runCmd(t, "", map[string]string{"SLACK_APP_TOKEN": "xapp-secret", "SLACK_BOT_TOKEN": "bad-secret"}, "run", "--listen", "")
	if code != 1 || !strings.Contains(errOut, "SLACK_BOT_TOKEN does not start with xoxb-") || strings.Contains(errOut, "secret") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

func TestRunRejectedTokens(t *testing.T) {
	fake := slackfake.New(slackfake.WithTokens("xoxb-good", "xapp-good"))
	defer fake.Close()
	code, _, errOut := runCmd(t, "", map[string]string{"SLACK_APP_TOKEN": "xapp-good", "SLACK_BOT_TOKEN": "xoxb-wrong", "SLACK_API_URL": fake.APIURL(),
		"INCIDENTBOT_DB": filepath.Join(t.TempDir(), "a.db")}, "run", "--listen", "")
	if code != 1 || !strings.Contains(errOut, "check SLACK_BOT_TOKEN") || strings.Contains(errOut, "xoxb-wrong") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// TestSIGTERMDrainsAndExitsZero builds the real binary, runs it against the
// fake Slack, and stops it with SIGTERM.
func TestSIGTERMDrainsAndExitsZero(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := binary(t)
	fake := slackfake.New()
	defer fake.Close()
	fake.AddChannel("C0INC", "inc-payments", false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "run", "--listen", addr)
	cmd.Env = append(os.Environ(), "SLACK_APP_TOKEN=xapp-1", "SLACK_BOT_TOKEN=xoxb-1", "SLACK_API_URL="+fake.APIURL(),
		"INCIDENTBOT_DB="+filepath.Join(t.TempDir(), "activity.db"), "INCIDENTBOT_INDEX_DIR="+builtinIndexCopy(t))
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := fake.WaitConnected(ctx, 1); err != nil {
		cmd.Process.Kill()
		t.Fatalf("not connected: %v\n%s", err, logs.String())
	}
	// An alert in flight when the signal comes is still answered.
	id := fake.SendEvent(map[string]any{"type": "message", "subtype": "bot_message", "bot_id": "B0AM", "text": "",
		"channel": "C0INC", "channel_type": "channel", "ts": "1732000000.000100",
		"attachments": []any{map[string]any{"title": "[FIRING:1] KubePodCrashLooping payments", "text": "pods OOMKilled, CrashLoopBackOff"}}})
	if _, err := fake.WaitAck(ctx, id); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/livez", "/healthz"} {
		if resp, err := httpGet(ctx, "http://"+addr+path); err != nil || resp != 200 {
			t.Errorf("%s = %d, %v while connected", path, resp, err)
		}
	}
	if code := waitStatus(ctx, "http://"+addr+"/readyz", 200); code != 200 {
		t.Errorf("/readyz = %d while connected with the store up", code)
	}
	// The build is a metric label (issue 12, item 22).
	if body := httpBody(ctx, t, "http://"+addr+"/metrics"); !strings.Contains(body, `incidentbot_build_info{goversion="go`) {
		t.Errorf("/metrics has no incidentbot_build_info:\n%.500s", body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-ctx.Done():
		cmd.Process.Kill()
		t.Fatalf("did not exit after SIGTERM\n%s", logs.String())
	}
	if _, err := fake.WaitCall(ctx, func(c slackfake.Call) bool {
		return c.Method == "chat.postMessage" && c.ThreadTS == "1732000000.000100"
	}); err != nil {
		t.Errorf("the alert in flight was not answered: %v", err)
	}
	if strings.Contains(logs.String(), "xoxb-1") || strings.Contains(logs.String(), "xapp-1") {
		t.Error("a token appears in the logs")
	}
}

func httpGet(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func httpBody(ctx context.Context, t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
