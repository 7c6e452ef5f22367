package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// These tests run the real incidentbot binary, built once from
// cmd/incidentbot. It is built without the race detector, which would
// make every process index the library ten times slower; the handlers
// behind it run under -race in this package's in-process tests.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

func incidentbot(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the incidentbot binary; not in -short")
	}
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "incidentbot-api-test")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "incidentbot")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/incidentbot").CombinedOutput()
		if err != nil {
			buildErr = err
			binPath = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build incidentbot: %v\n%s", buildErr, binPath)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// cleanEnv is the test's environment without incidentbot's own
// variables, plus extra.
func cleanEnv(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "INCIDENTBOT_") && !strings.HasPrefix(kv, "DATABASE_URL=") {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

var servingLine = regexp.MustCompile(`msg="serving the API, MCP and the library page" addr=(\S+) .*auth="([^"]*)"`)

// serve starts incidentbot serve and returns its base URL and the way it
// said requests are protected. The server is stopped when the test ends.
func serve(t *testing.T, env []string, args ...string) (base, auth string) {
	t.Helper()
	cmd := exec.Command(incidentbot(t), append([]string{"serve"}, args...)...)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	found := make(chan []string, 1)
	var logged bytes.Buffer
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logged.WriteString(sc.Text() + "\n")
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m
			}
		}
		cmd.Wait()
	}()
	select {
	case m := <-found:
		return "http://" + m[1], m[2]
	case <-done:
		t.Fatalf("incidentbot serve exited before serving:\n%s", logged.String())
	case <-time.After(2 * time.Minute):
		t.Fatal("incidentbot serve did not start within 2 minutes")
	}
	return "", ""
}

func TestMCPOverStdio(t *testing.T) {
	cmd := exec.Command(incidentbot(t), "mcp")
	cmd.Env = cleanEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs := connect(t, &mcp.CommandTransport{Command: cmd})
	exerciseMCP(t, cs)
	if t.Failed() {
		t.Logf("incidentbot mcp said on standard error:\n%s", stderr.String())
	}
}

func TestServeCommand(t *testing.T) {
	base, auth := serve(t, cleanEnv(), "--addr", "127.0.0.1:0")
	if !strings.Contains(auth, "loopback") {
		t.Errorf("start message %q does not say the server is open to loopback only", auth)
	}
	for _, path := range []string{"/", "/api/v1/cases?limit=1", "/api/v1/openapi.json"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
	exerciseMCP(t, connect(t, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}))
}

// Listening beyond loopback needs a token; with one, the server says so
// and every request must carry it.
func TestServeTokenRule(t *testing.T) {
	cmd := exec.Command(incidentbot(t), "serve", "--addr", "0.0.0.0:0")
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "INCIDENTBOT_API_TOKEN") {
		t.Errorf("serve on 0.0.0.0 without a token: %v\n%s", err, out)
	}

	base, auth := serve(t, cleanEnv("INCIDENTBOT_API_TOKEN=tok-123"), "--addr", "0.0.0.0:0")
	if !strings.Contains(auth, "Bearer $INCIDENTBOT_API_TOKEN") {
		t.Errorf("start message %q does not say requests need the token", auth)
	}
	base = strings.Replace(base, "0.0.0.0", "127.0.0.1", 1)
	base = strings.Replace(base, "[::]", "127.0.0.1", 1)
	for _, tok := range []string{"", "tok-123"} {
		req, _ := http.NewRequest("GET", base+"/api/v1/cases?limit=1", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[string]int{"": 401, "tok-123": 200}[tok]; resp.StatusCode != want {
			t.Errorf("token %q: %d, want %d", tok, resp.StatusCode, want)
		}
	}
}

// match_alert and POST /api/v1/match answer exactly what incidentbot
// match --json prints for the same text.
func TestSameAnswerAsMatchJSON(t *testing.T) {
	base, _ := serve(t, cleanEnv(), "--addr", "127.0.0.1:0")
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"})
	texts := []string{
		"p99 latency is up and the load balancer returns 502s after a deploy",
		"[FIRING:1] KubePodCrashLooping (prod payments-api-7d9f) pods OOMKilled and restarting in CrashLoopBackOff",
		"인증서가 만료되어 TLS 핸드셰이크가 실패합니다",
		"FATAL: remaining connection slots are reserved for non-replication superuser connections",
		"thanks everyone, good night",
	}
	for i, text := range texts {
		tops := []int{3}
		if i == 0 {
			tops = append(tops, 1, 7)
		}
		for _, top := range tops {
			cmd := exec.Command(incidentbot(t), "match", "--json", "--top", strconv.Itoa(top), "--", text)
			cmd.Env = cleanEnv()
			cli, err := cmd.Output()
			if err != nil {
				t.Fatalf("incidentbot match --json: %v", err)
			}

			body, _ := json.Marshal(map[string]any{"text": text, "top": top})
			resp, err := http.Post(base+"/api/v1/match", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !bytes.Equal(got, cli) {
				t.Errorf("%q top %d:\nPOST /api/v1/match %s\nmatch --json       %s", text, top, got, cli)
			}

			res, _ := call(t, cs, "match_alert", map[string]any{"text": text, "top": top})
			var fromCLI, fromMCP any
			json.Unmarshal(cli, &fromCLI)
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, &fromMCP)
			if res.IsError || !reflect.DeepEqual(fromCLI, fromMCP) {
				t.Errorf("%q top %d:\nmatch_alert  %s\nmatch --json %s", text, top, b, cli)
			}
		}
	}
}
