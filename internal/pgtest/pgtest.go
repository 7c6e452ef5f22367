// Package pgtest gives tests a PostgreSQL schema of their own, in the
// database named by INCIDENTBOT_TEST_DATABASE_URL.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// URLEnv names the environment variable with the test database's URL.
const URLEnv = "INCIDENTBOT_TEST_DATABASE_URL"

// BaseURL returns the test database's URL, skipping t when it is not set.
func BaseURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(URLEnv)
	if base == "" {
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
