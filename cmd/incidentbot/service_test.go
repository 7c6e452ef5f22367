package main

import (
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// unreachableURL is a Slack API address where nothing listens.
func unreachableURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/api/"
}

// TestUnreachableSlackIsNotBlamedOnToken: when Slack cannot be reached at
// all (refused connection, unknown host), the message says so and does not
// send the user to check a token that was never looked at.
func TestUnreachableSlackIsNotBlamedOnToken(t *testing.T) {
	for _, url := range []string{unreachableURL(t), "http://no-such-host.invalid/api/"} {
		code, _, errOut := runCmd(t, "", map[string]string{"SLACK_APP_TOKEN": "xapp-1-good-looking", "SLACK_BOT_TOKEN": "xoxb-1-good-looking",
			"SLACK_API_URL": url, "INCIDENTBOT_DB": filepath.Join(t.TempDir(), "a.db")}, "run", "--listen", "")
		if code != exitError || !strings.Contains(errOut, "cannot reach Slack") || strings.Contains(errOut, "check SLACK_BOT_TOKEN") {
			t.Errorf("%s: exit %d\n%s", url, code, errOut)
		}
	}
}

// TestFatalErrorsAreJSON: with --log-format json every line on stderr is
// a JSON object, the error that stops the bot included, and durations are
// written as "1.5s", not as nanoseconds.
func TestFatalErrorsAreJSON(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		code int
		want string
	}{
		{map[string]string{"SLACK_APP_TOKEN": "xapp-1", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_API_URL": unreachableURL(t),
			"INCIDENTBOT_DB": filepath.Join(t.TempDir(), "a.db")}, exitError, "cannot reach Slack"},
		{map[string]string{}, exitError, "SLACK_APP_TOKEN is not set"},
		{map[string]string{"INCIDENTBOT_WORKERS": "0"}, exitUsage, "INCIDENTBOT_WORKERS must be between 1 and 256"},
		// Mistakes the command line parser itself rejects, too.
		{map[string]string{"INCIDENTBOT_TOP": "abc"}, exitUsage, `INCIDENTBOT_TOP="abc"`},
		{map[string]string{"INCIDENTBOT_LOG_FORMAT": "json"}, exitUsage, "unknown flag --nope"},
	} {
		args := []string{"run", "--listen", "", "--log-format", "json"}
		if tc.env["INCIDENTBOT_LOG_FORMAT"] != "" {
			args = []string{"run", "--nope"}
		}
		code, _, errOut := runCmd(t, "", tc.env, args...)
		if code != tc.code {
			t.Errorf("exit %d, want %d\n%s", code, tc.code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		var last map[string]any
		for _, l := range lines {
			var rec map[string]any
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Errorf("not a JSON line: %q", l)
				continue
			}
			last = rec
			if took, ok := rec["took"]; ok {
				s, isString := took.(string)
				if _, err := time.ParseDuration(s); !isString || err != nil {
					t.Errorf("took = %v (%T), want a duration string", took, took)
				}
			}
		}
		if last == nil || last["level"] != "ERROR" || !strings.Contains(last["err"].(string), tc.want) {
			t.Errorf("last line %v, want an ERROR with %q", last, tc.want)
		}
	}
}

// TestBuildInfo: the version comes from the module and VCS stamps, and an
// -ldflags version replaces the module's.
func TestBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-30T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := fromBuildInfo(bi, "")
	want := buildInfo{Version: "v1.4.0", Revision: "0123456789abcdef0123456789abcdef01234567", Time: "2026-11-30T10:00:00Z", Modified: true, GoVersion: "go1.26.8"}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := fromBuildInfo(bi, "v9.9.9"); got.Version != "v9.9.9" {
		t.Errorf("override: %+v", got)
	}
	if got := fromBuildInfo(nil, ""); got.Version != "(devel)" || got.Revision != "unknown" || got.GoVersion != runtime.Version() {
		t.Errorf("no build info: %+v", got)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(got.collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "incidentbot_build_info" || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v", mfs)
	}
	labels := map[string]string{}
	for _, m := range mfs[0].GetMetric() {
		if m.GetGauge().GetValue() != 1 {
			t.Errorf("value %v", m.GetGauge().GetValue())
		}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] += l.GetValue() + ";"
		}
	}
	if !strings.Contains(labels["revision"], "0123456789abcdef0123456789abcdef01234567+modified") || !strings.Contains(labels["version"], "v1.4.0") ||
		!strings.Contains(labels["goversion"], "go1.26.8") {
		t.Errorf("labels %v", labels)
	}
}

// TestVersionCommand builds the binary with a version set at link time and
// checks "version" and the start log line report it.
func TestVersionCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "incidentbot")
	if out, err := exec.Command("go", "build", "-ldflags", "-X main.version=v9.9.9-test", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.Contains(string(out), "incidentbot v9.9.9-test") || !strings.Contains(string(out), runtime.Version()) || !strings.Contains(string(out), "revision:") {
		t.Errorf("version: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "run", "--listen", "")
	cmd.Env = []string{"HOME=" + t.TempDir()}
	logs, _ := cmd.CombinedOutput()
	if !strings.Contains(string(logs), `msg="incidentbot starting" version=v9.9.9-test`) {
		t.Errorf("start log:\n%s", logs)
	}
}
