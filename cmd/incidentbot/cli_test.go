package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	_ "modernc.org/sqlite"
)

// TestBatchOneOutputLinePerInputLine: a line over the 8 MiB limit is
// answered with its id (written before or after the text), and a blank
// line gets its own error line, so output line N answers input line N.
func TestBatchOneOutputLinePerInputLine(t *testing.T) {
	big := strings.Repeat("disk full ", (maxInput/10)+1000)
	lines := []string{
		`{"id": "first", "text": "` + big + `"}`,
		``,
		`{"text": "` + big + `", "id": {"n": 2}}`,
		`   `,
		`{"id": "last", "text": "DNS lookups failing with SERVFAIL"}`,
	}
	code, out, errOut := runCmd(t, strings.Join(lines, "\n")+"\n", nil, "match", "--batch")
	if code != exitError {
		t.Errorf("exit %d, want 1: %s", code, errOut)
	}
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != len(lines) {
		t.Fatalf("%d output lines for %d input lines:\n%.2000s", len(got), len(lines), out)
	}
	want := []struct{ id, err string }{
		{`"first"`, "line 1: longer than 8 MiB"},
		{``, "line 2: empty line"},
		{`{"n":2}`, "line 3: longer than 8 MiB"},
		{``, "line 4: empty line"},
		{`"last"`, ""},
	}
	for i, w := range want {
		var rec struct {
			ID      json.RawMessage `json:"id"`
			Error   string          `json:"error"`
			Results []any           `json:"results"`
		}
		if err := json.Unmarshal([]byte(got[i]), &rec); err != nil {
			t.Fatalf("line %d: %v: %.300s", i+1, err, got[i])
		}
		if string(rec.ID) != w.id || !strings.Contains(rec.Error, w.err) || (w.err == "") != (rec.Error == "") {
			t.Errorf("line %d: id %s error %q; want id %s error %q", i+1, rec.ID, rec.Error, w.id, w.err)
		}
	}
}

// TestLockedSQLiteAdvice: a SQLite file another process holds gets advice
// about the lock, not "set --db".
func TestLockedSQLiteAdvice(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for SQLite's busy timeout")
	}
	t.Parallel()
	db := filepath.Join(t.TempDir(), "activity.db")
	// Make the store, then hold an exclusive lock on it.
	openStoreForTest(t, db)
	other, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	if _, err := conn.ExecContext(context.Background(), "CREATE TABLE held (x)"); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd(t, "", nil, "digest", "preview", "--db", db)
	if code != exitError || !strings.Contains(errOut, "another process holds a lock") || strings.Contains(errOut, "set --db") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// openStoreForTest makes an activity store file the way the bot does.
func openStoreForTest(t *testing.T, path string) {
	t.Helper()
	var sf storeFlags
	sf.DB = path
	st, _, err := sf.open(context.Background(), env{getenv: func(string) string { return "" }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
}

// TestDigestPreviewDoesNotCreateStore: previewing with a --db that does
// not exist says so and leaves no file behind.
func TestDigestPreviewDoesNotCreateStore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sub", "activity.db")
	code, _, errOut := runCmd(t, "", nil, "digest", "preview", "--db", db)
	if code != exitError || !strings.Contains(errOut, "no activity store at "+db) {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Dir(db)); !os.IsNotExist(err) {
		t.Errorf("preview created %s (%v)", filepath.Dir(db), err)
	}
	// An existing store previews as before.
	openStoreForTest(t, db)
	if code, out, errOut := runCmd(t, "", nil, "digest", "preview", "--db", db); code != 0 || !strings.Contains(out, "digest") {
		t.Errorf("existing store: exit %d: %s%s", code, out, errOut)
	}
}

// TestShowDidYouMean: a mistyped case id is answered with the closest ids.
func TestShowDidYouMean(t *testing.T) {
	for typo, want := range map[string]string{
		"cloudflare-2019-07-0":  "cloudflare-2019-07-02",
		"cloudfare-2019-07-02":  "cloudflare-2019-07-02",
		"clouflare-2019-07-02x": "cloudflare-2019-07-02",
		"gitlab-2017":           "gitlab-2017-01-31",
	} {
		code, _, errOut := runCmd(t, "", nil, "show", typo)
		if code != exitError || !strings.Contains(errOut, "did you mean "+want) && !strings.Contains(errOut, ", "+want) {
			t.Errorf("show %s: exit %d: %s", typo, code, errOut)
		}
	}
	code, _, errOut := runCmd(t, "", nil, "show", "zzzzzzzz-nothing-like-it")
	if code != exitError || strings.Contains(errOut, "did you mean") || !strings.Contains(errOut, "cases list") {
		t.Errorf("far id: exit %d: %s", code, errOut)
	}
}

// TestCasesListFitsTheWidth: "cases list" fits 100 columns when standard
// output is not a terminal, and ids are never cut.
func TestCasesListFitsTheWidth(t *testing.T) {
	code, out, _ := runCmd(t, "", nil, "cases", "list")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 250 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if columns(l) > 100 || utf8.RuneCountInString(l) > 100 {
			t.Errorf("%d columns: %q", columns(l), l)
		}
	}
	_, js, _ := runCmd(t, "", nil, "cases", "list", "--json")
	var list []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(js), &list); err != nil {
		t.Fatal(err)
	}
	for i, c := range list {
		if !strings.HasPrefix(lines[i+1], c.ID+" ") {
			t.Errorf("line %d does not start with the whole id %s: %q", i+2, c.ID, lines[i+1])
		}
	}
}

// TestDigestNextSaysWhenInWords: "digest next" prints the date and "in 5
// days 10 hours", not a Go duration like 130h18m0s.
func TestDigestNextSaysWhenInWords(t *testing.T) {
	code, out, errOut := runCmd(t, "", nil, "digest", "next", "--digest", "C0123ABCD", "--digest", "C0456;CRON_TZ=Asia/Seoul 0 9 * * *;ko")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	re := regexp.MustCompile(`^\S+\t(en|ko)\t\w{3} \d{4}-\d\d-\d\d \d\d:\d\d \S+ \(in (\d+ days?( \d+ hours?)?|\d+ hours?( \d+ minutes?)?|\d+ minutes?)\)\t`)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !re.MatchString(l) {
			t.Errorf("line %q", l)
		}
	}
	for d, want := range map[time.Duration]string{
		130*time.Hour + 18*time.Minute: "in 5 days 10 hours",
		24 * time.Hour:                 "in 1 day",
		25 * time.Hour:                 "in 1 day 1 hour",
		61 * time.Minute:               "in 1 hour 1 minute",
		2 * time.Hour:                  "in 2 hours",
		90 * time.Second:               "in 2 minutes",
		20 * time.Second:               "now",
	} {
		if got := humanIn(d); got != want {
			t.Errorf("humanIn(%v) = %q, want %q", d, got, want)
		}
	}
}
