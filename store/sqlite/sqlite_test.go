package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/incidentbot/incidentbot/store"
	"github.com/incidentbot/incidentbot/store/sqlite"
	"github.com/incidentbot/incidentbot/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "activity.db"), sqlite.WithNow(storetest.Clock(t).Now))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestContractShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		path := filepath.Join(t.TempDir(), "activity.db")
		var stores [2]store.Store
		for i := range stores {
			s, err := sqlite.Open(t.Context(), path, sqlite.WithNow(storetest.Clock(t).Now))
			if err != nil {
				t.Fatal(err)
			}
			stores[i] = s
		}
		return stores[0], stores[1]
	})
}

func TestMigrations(t *testing.T) {
	storetest.RunMigrations(t, func(t *testing.T) storetest.Database {
		path := filepath.Join(t.TempDir(), "activity.db")
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return storetest.Database{
			Open: func(t *testing.T, upTo int) (store.Store, error) {
				return sqlite.Open(t.Context(), path, sqlite.WithSchemaVersion(upTo))
			},
			DB:         db,
			Migrations: migrations(t),
			OtherToolsTable: `CREATE TABLE schema_migrations (version uint64, dirty bool);
				CREATE UNIQUE INDEX version_unique ON schema_migrations (version);
				INSERT INTO schema_migrations VALUES (20240101120000, 0)`,
			OldTableCount: `SELECT count(*) FROM sqlite_schema WHERE name = 'schema_migrations'`,
			NewerVersion:  `INSERT INTO incidentbot_schema_migrations VALUES (9999, 0)`,
		}
	})
}

func TestOpenCreatesParentsAndSurvivesRestart(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "a", "b", "activity.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	when := time.Date(2025, 3, 3, 12, 0, 0, 123e6, time.UTC)
	if err := s.RecordSuggestion(ctx, store.Suggestion{Key: "C1:1", Time: when, Symptoms: []string{"latency"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	got, err := s.Suggestions(ctx, when, when.Add(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != "C1:1" || !got[0].Time.Equal(when) || len(got[0].Symptoms) != 1 {
		t.Errorf("after reopening, Suggestions = %+v, want the one recorded before", got)
	}
}

// TestSchemaAndPragmas reads with a plain connection what Open set up.
func TestSchemaAndPragmas(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "activity.db")
	for range 2 { // the second Open finds the schema up to date
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var versions, max int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*), MAX(version) FROM incidentbot_schema_migrations").Scan(&versions, &max); err != nil {
		t.Fatal(err)
	}
	if versions != max || versions < 1 {
		t.Errorf("incidentbot_schema_migrations has %d rows up to version %d, want one row per version from 1", versions, max)
	}
}

// migrations returns how many migrations the package embeds.
func migrations(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("list the migrations: %v, %v", files, err)
	}
	return len(files)
}

// TestTwoProcesses opens one file twice, as two processes would: each
// handle has its own connections, so they agree only through SQLite's file
// locks.
func TestTwoProcesses(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "activity.db")

	// Both open a fresh file at once: the migrations run exactly once.
	var (
		wg     sync.WaitGroup
		stores [2]*sqlite.Store
		errs   [2]error
	)
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = sqlite.Open(ctx, path) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		defer stores[i].Close()
	}

	for week := range 10 {
		w := fmt.Sprintf("2025-W%02d", week+1)
		var (
			mu  sync.Mutex
			won int
		)
		for i, s := range stores {
			wg.Go(func() {
				ok, err := s.ClaimDigest(ctx, "C1", w, fmt.Sprint("replica-", i), time.Minute)
				if err != nil {
					t.Errorf("ClaimDigest: %v", err)
				}
				if ok {
					mu.Lock()
					won++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if won != 1 {
			t.Errorf("week %s: %d replicas won the digest, want 1", w, won)
		}
	}

	for i := range 50 {
		s := stores[i%2]
		wg.Go(func() {
			if err := s.RecordSuggestion(ctx, store.Suggestion{Key: "same", Time: time.Unix(1, 0)}); err != nil {
				t.Errorf("RecordSuggestion: %v", err)
			}
		})
	}
	wg.Wait()
	got, err := stores[1].Suggestions(ctx, time.Unix(0, 0), time.Unix(2, 0))
	if err != nil || len(got) != 1 {
		t.Errorf("Suggestions = %d rows, %v; want 1", len(got), err)
	}
}

func TestOpenRejectsURIs(t *testing.T) {
	for _, path := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro"} {
		if s, err := sqlite.Open(context.Background(), path); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error", path)
		}
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/data")
	if got, err := sqlite.DefaultPath(); err != nil || got != "/data/incidentbot/activity.db" {
		t.Errorf("with XDG_DATA_HOME, DefaultPath = %q, %v", got, err)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, xdg := range []string{"", "relative/dir"} {
		t.Setenv("XDG_DATA_HOME", xdg)
		want := filepath.Join(home, ".local", "share", "incidentbot", "activity.db")
		if got, err := sqlite.DefaultPath(); err != nil || got != want {
			t.Errorf("with XDG_DATA_HOME=%q, DefaultPath = %q, %v; want %q", xdg, got, err, want)
		}
	}
}

// TestBufferedFlushesIntoSQLite runs a Buffered whose context has already
// ended: Run writes everything queued in its shutdown flush.
func TestBufferedFlushesIntoSQLite(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "activity.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := store.NewBuffered(s, slog.New(slog.DiscardHandler), store.BufferOptions{})
	when := time.Date(2025, 3, 3, 12, 0, 0, 0, time.UTC)
	for i := range 20 {
		b.RecordSuggestionAsync(store.Suggestion{Key: fmt.Sprint("C1:", i), Time: when})
	}
	b.RecordFeedbackAsync(store.Feedback{Time: when, Channel: "C1", Message: "1.1", User: "U1", CaseID: "pg", Vote: store.Helpful})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if b.Pending() != 0 || b.Dropped() != 0 {
		t.Errorf("Pending %d, Dropped %d; want 0, 0", b.Pending(), b.Dropped())
	}
	got, err := b.Suggestions(t.Context(), when, when.Add(time.Second))
	if err != nil || len(got) != 20 {
		t.Errorf("Suggestions = %d rows, %v; want 20", len(got), err)
	}
	if h, _, err := b.CaseFeedback(t.Context(), "pg"); err != nil || h != 1 {
		t.Errorf("CaseFeedback = %d, %v; want 1", h, err)
	}
}

// TestInboxDoneKeepsNoPayload reads the file: once an event is handled, only
// its key is left.
func TestInboxDoneKeepsNoPayload(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "activity.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	secret := []byte(`{"event":{"text":"private: customer card number leaked"}}`)
	if _, err := s.InboxPut(ctx, store.InboxItem{Key: "Ev1", Kind: "events_api", Payload: secret, Owner: "r1"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.InboxDone(ctx, "Ev1"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT length(payload) FROM inbox WHERE key = 'Ev1'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a handled event keeps %d bytes of payload, want 0", n)
	}
}

// TestFilesPrivate: the database and its -wal and -shm files are readable by
// their owner only, whatever the umask, also when an older version left
// the database readable by others.
func TestFilesPrivate(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	old := filepath.Join(dir, "old.db")
	if err := os.WriteFile(old, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "new.db"), old} {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.RecordSuggestion(ctx, store.Suggestion{Key: "k", Time: time.Now()}); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if mode := fi.Mode().Perm(); mode != 0o600 {
				t.Errorf("%s has mode %v, want -rw-------", filepath.Base(f), mode)
			}
		}
		s.Close()
	}
}

// TestFullDiskIsAnOutage: a full disk fails writes with an error the write
// buffer keeps retrying (not store.ErrRejected), so the suggestions and
// votes wait (up to the buffer's 10 minutes) instead of being given up.
func TestFullDiskIsAnOutage(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "activity.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var pages int
	if err := db.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	db.Close()
	full, err := sqlite.Open(ctx, path, sqlite.WithMaxPages(pages))
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	big := store.Feedback{Channel: "C1", Message: "1.2", User: "U1", CaseID: "pg", Vote: store.Helpful, Time: time.Now(),
		Query: strings.Repeat("결제 API 타임아웃 ", 2000)}
	_, err = full.RecordFeedback(ctx, big)
	if err == nil {
		t.Fatal("RecordFeedback on a full database succeeded")
	}
	if errors.Is(err, store.ErrRejected) {
		t.Errorf("a full disk is reported as a rejected write (%v): the buffer would give the vote up", err)
	}
	if !strings.Contains(err.Error(), "full") {
		t.Errorf("error %q does not say the database is full", err)
	}
}
