// Package pgtest gives tests a PostgreSQL schema of their own, in the
// database named by INCIDENTBOT_TEST_DATABASE_URL.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// URLEnv names the environment variable with the test database's URL.
const URLEnv = "INCIDENTBOT_TEST_DATABASE_URL"

// skipped counts the tests skipped for want of a database.
var skipped atomic.Int64

// BaseURL returns the test database's URL, skipping t when it is not set.
func BaseURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(URLEnv)
	if base == "" {
		skipped.Add(1)
		t.Skip(URLEnv + " not set: PostgreSQL tests skipped; set it to e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	return base
}

// Schema creates a schema for t, drops it when t ends, and returns the URL
// that selects it. It skips t when INCIDENTBOT_TEST_DATABASE_URL is unset
// and fails t when the database cannot be reached.
func Schema(t testing.TB, prefix string) string {
	t.Helper()
	base := BaseURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("%s is set but the database cannot be reached: %v", URLEnv, err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 8)
	rand.Read(b)
	name := prefix + "_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("create schema %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return WithSearchPath(t, base, name)
}

// Absent makes sure no schema called name exists in the database url names,
// for a test of code that creates it, and drops it again when t ends. It
// returns a connection to url for the test's own queries, closed when t
// ends, after the drop.
func Absent(t testing.TB, url, name string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("%s is set but the database cannot be reached: %v", URLEnv, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	drop := func() error {
		_, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+name+" CASCADE")
		return err
	}
	if err := drop(); err != nil {
		t.Fatalf("drop schema %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return conn
}

// WithSearchPath adds search_path, which pgx sends as a run-time parameter,
// to a URL or a keyword/value connection string.
func WithSearchPath(t testing.TB, base, schema string) string {
	t.Helper()
	if !strings.Contains(base, "://") {
		return base + " search_path=" + schema
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", URLEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Main runs a package's tests (call it from TestMain) and, when tests were
// skipped for want of INCIDENTBOT_TEST_DATABASE_URL, says so where it is
// seen: go test ./... shows only "ok" for a passing package, so a skip
// would pass for a pass. The notice goes to the terminal, once per go test
// run, and to the test output (shown with -v).
func Main(m *testing.M) int {
	code := m.Run()
	n := skipped.Load()
	if n == 0 {
		return code
	}
	line := fmt.Sprintf("NOTE: PostgreSQL tests were SKIPPED (%d in this package): set %s, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable, to run them", n, URLEnv)
	fmt.Fprintln(os.Stderr, line)
	// One line per go test run: the packages' test binaries share their
	// parent, the go command.
	marker := filepath.Join(os.TempDir(), fmt.Sprintf("incidentbot-pgtest-notice-%d", os.Getppid()))
	if f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
		f.Close()
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			fmt.Fprintln(tty, "NOTE: PostgreSQL tests were SKIPPED: set "+URLEnv+" (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run them")
			tty.Close()
		}
	}
	return code
}
