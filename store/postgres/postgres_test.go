package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/incidentbot/incidentbot/store"
	"github.com/incidentbot/incidentbot/store/postgres"
	"github.com/incidentbot/incidentbot/store/storetest"
)

const urlEnv = "INCIDENTBOT_TEST_DATABASE_URL"

// schema creates a schema of its own for test t in the database named by
// INCIDENTBOT_TEST_DATABASE_URL, drops it when t ends, and returns the URL
// that selects it. It skips t when the variable is unset and fails it when
// the database cannot be reached.
func schema(t *testing.T) string {
	t.Helper()
	base := baseURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("%s is set but the database cannot be reached: %v", urlEnv, err)
	}
	defer conn.Close(ctx)

	b := make([]byte, 8)
	rand.Read(b)
	name := "storetest_" + hex.EncodeToString(b)
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
	return withSearchPath(t, base, name)
}

// baseURL returns INCIDENTBOT_TEST_DATABASE_URL, skipping t when it is unset.
func baseURL(t *testing.T) string {
	t.Helper()
	base := os.Getenv(urlEnv)
	if base == "" {
		t.Skip(urlEnv + " not set: PostgreSQL store tests skipped; set it to e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	return base
}

// withSearchPath adds search_path, which pgx sends as a run-time parameter,
// to a URL or a keyword/value connection string.
func withSearchPath(t *testing.T, base, schema string) string {
	if !strings.Contains(base, "://") {
		return base + " search_path=" + schema
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", urlEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func open(t *testing.T, url string, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestContract(t *testing.T) {
	baseURL(t) // skip once, up front
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, schema(t), postgres.WithNow(storetest.Clock(t).Now))
	})
}

// TestOpenRace starts two replicas at once on a fresh schema: both open,
// and each migration is applied once.
func TestOpenRace(t *testing.T) {
	url := schema(t)
	var (
		wg     sync.WaitGroup
		stores [4]*postgres.Store
		errs   [4]error
	)
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = postgres.Open(t.Context(), url) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	assertMigrated(t, url)
}

func assertMigrated(t *testing.T, url string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n, max int
	if err := conn.QueryRow(t.Context(), "SELECT count(*), max(version) FROM schema_migrations").Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n < 1 || n != max {
		t.Errorf("schema_migrations has %d rows up to version %d, want one row per version from 1", n, max)
	}
}

func TestSurvivesRestart(t *testing.T) {
	ctx, url := t.Context(), schema(t)
	s := open(t, url)
	when := time.Date(2025, 3, 3, 12, 0, 0, 123e6, time.UTC)
	if err := s.RecordSuggestion(ctx, store.Suggestion{Key: "C1:1", Time: when, Symptoms: []string{"latency"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(t, url)
	defer s.Close()
	got, err := s.Suggestions(ctx, when, when.Add(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != "C1:1" || !got[0].Time.Equal(when) || len(got[0].Symptoms) != 1 {
		t.Errorf("after reopening, Suggestions = %+v, want the one recorded before", got)
	}
	assertMigrated(t, url)
}

func TestOpenBadURL(t *testing.T) {
	_, err := postgres.Open(t.Context(), "postgres://user:secret@127.0.0.1:5432/db?sslmode=nonsense")
	if err == nil {
		t.Fatal("Open with a bad URL succeeded")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error %q shows the password", err)
	}
}
