package main

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
)

// TestBadEnvironmentRejectedLikeFlags: a value in the environment that its
// flag would reject stops the command with a usage error naming the
// variable, instead of being replaced by the default.
func TestBadEnvironmentRejectedLikeFlags(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{"INCIDENTBOT_TOP": "abc"}, []string{"run"}, `INCIDENTBOT_TOP="abc"`},
		{map[string]string{"INCIDENTBOT_FLOOR": "zzz"}, []string{"run"}, `INCIDENTBOT_FLOOR="zzz"`},
		{map[string]string{"INCIDENTBOT_BUILTIN": "maybe"}, []string{"run"}, `INCIDENTBOT_BUILTIN="maybe"`},
		{map[string]string{"INCIDENTBOT_BUILTIN": "maybe"}, []string{"match", "disk full"}, `INCIDENTBOT_BUILTIN="maybe"`},
		{map[string]string{"INCIDENTBOT_DIGEST_GRACE": "1x"}, []string{"run"}, `INCIDENTBOT_DIGEST_GRACE="1x"`},
		{map[string]string{"INCIDENTBOT_INBOX_LEASE": "soon"}, []string{"run"}, `INCIDENTBOT_INBOX_LEASE="soon"`},
		{map[string]string{"INCIDENTBOT_WORKERS": "many"}, []string{"run"}, `INCIDENTBOT_WORKERS="many"`},
		{map[string]string{"INCIDENTBOT_LANG": "fr"}, []string{"run"}, `INCIDENTBOT_LANG="fr"`},
		{map[string]string{"INCIDENTBOT_LOG_FORMAT": "xml"}, []string{"run"}, `INCIDENTBOT_LOG_FORMAT="xml"`},
		// In range checks too, named as the user set them.
		{map[string]string{"INCIDENTBOT_TOP": "11"}, []string{"run"}, "INCIDENTBOT_TOP must be between 1 and 10, got 11"},
		{map[string]string{"INCIDENTBOT_WORKERS": "100000000"}, []string{"run"}, "INCIDENTBOT_WORKERS must be between 1 and 256, got 100000000"},
		{map[string]string{"INCIDENTBOT_FLOOR": "1.5"}, []string{"run"}, "INCIDENTBOT_FLOOR must be above 0 and below 1, got 1.5"},
		{map[string]string{"INCIDENTBOT_DIGEST_GRACE": "8d"}, []string{"run"}, "INCIDENTBOT_DIGEST_GRACE must be between 0s and 7d, got 8d"},
		{map[string]string{"INCIDENTBOT_RETENTION": "1d"}, []string{"run"}, "INCIDENTBOT_RETENTION must be between 7d and 36500d, got 1d"},
		{nil, []string{"run", "--workers", "100000000"}, "--workers must be between 1 and 256, got 100000000"},
		{nil, []string{"run", "--inbox-lease", "1s"}, "--inbox-lease must be between 2s and 1h0m0s, got 1s"},
		{map[string]string{"INCIDENTBOT_ADMIN_GROUP": "@incident-admins"}, []string{"run"}, `INCIDENTBOT_ADMIN_GROUP must be a user group id such as S0123ABCD`},
		{nil, []string{"run", "--admin-group", "admins"}, `--admin-group must be a user group id such as S0123ABCD`},
	} {
		code, _, errOut := runCmd(t, "", tc.env, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v %v: exit %d, stderr %q; want exit 2 and %q", tc.env, tc.args, code, errOut, tc.want)
		}
	}
}

// TestGoodEnvironmentAccepted: values the flags take are taken from the
// environment too (the run then stops only at the missing Slack token), an
// empty variable counts as unset, and a flag wins over its variable.
func TestGoodEnvironmentAccepted(t *testing.T) {
	for _, env := range []map[string]string{
		{"INCIDENTBOT_DIGEST_GRACE": "1d"},
		{"INCIDENTBOT_DIGEST_GRACE": "1d12h", "INCIDENTBOT_RETENTION": "720h", "INCIDENTBOT_INBOX_LEASE": "90s"},
		{"INCIDENTBOT_TOP": "", "INCIDENTBOT_FLOOR": "", "INCIDENTBOT_WORKERS": ""},
		{"INCIDENTBOT_WORKERS": "256", "INCIDENTBOT_TOP": "10", "INCIDENTBOT_BUILTIN": "yes"},
	} {
		code, _, errOut := runCmd(t, "", env, "run", "--listen", "")
		if code != exitError || !strings.Contains(errOut, "SLACK_APP_TOKEN is not set") {
			t.Errorf("%v: exit %d, %s", env, code, errOut)
		}
	}
	code, _, errOut := runCmd(t, "", map[string]string{"INCIDENTBOT_TOP": "abc"}, "run", "--top", "2", "--listen", "")
	if code != exitError || !strings.Contains(errOut, "SLACK_APP_TOKEN is not set") {
		t.Errorf("--top 2 over INCIDENTBOT_TOP=abc: exit %d, %s", code, errOut)
	}
	// INCIDENTBOT_BUILTIN=false leaves the built-in library out of match.
	code, _, errOut = runCmd(t, "", map[string]string{"INCIDENTBOT_BUILTIN": "false"}, "match", "disk full")
	if code != exitError || !strings.Contains(errOut, "the case library is empty") {
		t.Errorf("INCIDENTBOT_BUILTIN=false: exit %d, %s", code, errOut)
	}
}

// TestDurationsTakeDays: every duration flag reads the same forms.
func TestDurationsTakeDays(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"90s": 90 * time.Second, "12h": 12 * time.Hour, "7d": 7 * 24 * time.Hour,
		"1d12h": 36 * time.Hour, "180d": 180 * 24 * time.Hour, "0s": 0, "1h30m": 90 * time.Minute,
	} {
		got, err := parseDuration(in)
		if err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
		if back, err := parseDuration(formatDuration(got)); err != nil || back != got {
			t.Errorf("%q: formatDuration gives %q, which reads back as %v, %v", in, formatDuration(got), back, err)
		}
	}
	for _, in := range []string{"", "d", "1x", "-1d", "-5s", "1.5d", "d12h", "1d-1h", "99999999d", "7 days"} {
		if got, err := parseDuration(in); err == nil {
			t.Errorf("parseDuration(%q) = %v, want an error", in, got)
		}
	}
}

// TestEveryCommandHasHelp: --help of every command, and "help COMMAND",
// print its usage on standard output and exit 0.
func TestEveryCommandHasHelp(t *testing.T) {
	for _, path := range commandPaths(t) {
		for _, args := range [][]string{append(strings.Fields(path), "--help"), append([]string{"help"}, strings.Fields(path)...)} {
			code, out, errOut := runCmd(t, "", nil, args...)
			if code != exitOK || !strings.Contains(out, "Usage: incidentbot "+path) {
				t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
			}
		}
	}
	code, out, _ := runCmd(t, "", nil, "--help")
	if code != exitOK || !strings.Contains(out, "digest preview") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
}

// TestREADMEDocumentsEveryFlag: each flag of each command, and each
// environment variable behind one, appears in the README.
func TestREADMEDocumentsEveryFlag(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	k := newKong(t)
	checked := 0
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			if f.Name == "help" {
				continue
			}
			if !strings.Contains(string(readme), "`--"+f.Name) {
				t.Errorf("README does not document --%s (of %s)", f.Name, n.FullPath())
			}
			for _, v := range f.Tag.Envs {
				if !strings.Contains(string(readme), "`"+v+"`") {
					t.Errorf("README does not document %s (--%s)", v, f.Name)
				}
			}
			checked++
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(k.Model.Node)
	if checked < 20 {
		t.Fatalf("only %d flags found: the walk is broken", checked)
	}
	for _, path := range commandPaths(t) {
		if !strings.Contains(string(readme), "incidentbot "+path) {
			t.Errorf("README does not show the command %q", path)
		}
	}
}

func newKong(t *testing.T) *kong.Kong {
	t.Helper()
	k, err := kong.New(&cli{}, kongOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// commandPaths lists every leaf command, e.g. "digest preview".
func commandPaths(t *testing.T) []string {
	var out []string
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		if n.Type == kong.CommandNode && len(n.Children) == 0 {
			out = append(out, strings.TrimPrefix(n.FullPath(), "incidentbot "))
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(newKong(t).Model.Node)
	if len(out) < 9 || !reflect.DeepEqual(out[:1], []string{"match"}) {
		t.Fatalf("commands: %v", out)
	}
	return out
}
