package postgres_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/incidentbot/incidentbot/internal/pgtest"
	"github.com/incidentbot/incidentbot/store"
	"github.com/incidentbot/incidentbot/store/postgres"
	"github.com/incidentbot/incidentbot/store/storetest"
)

// schema gives t a schema of its own (see pgtest.Schema).
func schema(t *testing.T) string { return pgtest.Schema(t, "storetest") }

// baseURL returns INCIDENTBOT_TEST_DATABASE_URL, skipping t when it is unset.
func baseURL(t *testing.T) string { return pgtest.BaseURL(t) }

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

func TestContractShared(t *testing.T) {
	baseURL(t)
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		url := schema(t)
		return open(t, url, postgres.WithNow(storetest.Clock(t).Now)), open(t, url, postgres.WithNow(storetest.Clock(t).Now))
	})
}

func TestMigrations(t *testing.T) {
	baseURL(t)
	storetest.RunMigrations(t, func(t *testing.T) storetest.Database {
		url := schema(t)
		db, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		files, err := filepath.Glob("migrations/*.sql")
		if err != nil || len(files) == 0 {
			t.Fatalf("list the migrations: %v, %v", files, err)
		}
		return storetest.Database{
			Open: func(t *testing.T, upTo int) (store.Store, error) {
				return postgres.Open(t.Context(), url, postgres.WithSchemaVersion(upTo))
			},
			DB:         db,
			Migrations: len(files),
			OtherToolsTable: `CREATE TABLE schema_migrations (version bigint NOT NULL PRIMARY KEY, dirty boolean NOT NULL);
				INSERT INTO schema_migrations VALUES (20240101120000, false)`,
			OldTableCount: `SELECT count(to_regclass('schema_migrations'))`,
			NewerVersion:  `INSERT INTO incidentbot_schema_migrations (version) VALUES (9999)`,
		}
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
	if err := conn.QueryRow(t.Context(), "SELECT count(*), max(version) FROM incidentbot_schema_migrations").Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n < 1 || n != max {
		t.Errorf("incidentbot_schema_migrations has %d rows up to version %d, want one row per version from 1", n, max)
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

// TestInboxDoneKeepsNoPayload reads the table: once an event is handled,
// only its key is left.
func TestInboxDoneKeepsNoPayload(t *testing.T) {
	url := schema(t)
	s := open(t, url)
	defer s.Close()
	ctx := t.Context()
	secret := []byte(`{"event":{"text":"private: customer card number leaked"}}`)
	if _, err := s.InboxPut(ctx, store.InboxItem{Key: "Ev1", Kind: "events_api", Payload: secret, Owner: "r1"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.InboxDone(ctx, "Ev1"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT length(payload) FROM inbox WHERE key = 'Ev1'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a handled event keeps %d bytes of payload, want 0", n)
	}
}

// TestWithSchema: the store's tables go to the schema named, created if
// missing, whatever the URL's search_path says.
func TestWithSchema(t *testing.T) {
	url := schema(t) // its search_path names another schema
	ctx := t.Context()
	name := "incidentbot_own_" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_"))
	conn := pgtest.Absent(t, url, name)
	s := open(t, url, postgres.WithSchema(name))
	defer s.Close()
	if err := s.RecordSuggestion(ctx, store.Suggestion{Key: "k", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var inNamed, inURLs int
	if err := conn.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name IN ('suggestions', 'incidentbot_schema_migrations')),
		(SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema())`, name).Scan(&inNamed, &inURLs); err != nil {
		t.Fatal(err)
	}
	if inNamed != 2 || inURLs != 0 {
		t.Errorf("tables: %d of 2 in schema %s, %d in the URL's schema; want all in %s", inNamed, name, inURLs, name)
	}
	// Opening again reuses it.
	open(t, url, postgres.WithSchema(name)).Close()
}

// TestWatchTeamCases: a replica listening hears every put and delete of a
// team case in its schema committed by another, and reads the change when
// it does; a change in another schema of the database is not announced to
// it.
func TestWatchTeamCases(t *testing.T) {
	ctx, url := t.Context(), schema(t)
	a, b := open(t, url), open(t, url)
	other := open(t, schema(t))
	defer a.Close()
	defer b.Close()
	defer other.Close()

	type heard struct {
		n       int
		version int64
	}
	calls := make(chan heard, 100)
	n := 0
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- a.WatchTeamCases(wctx, func() {
			n++
			v, err := a.TeamCasesVersion(ctx)
			if err != nil {
				t.Error(err)
			}
			calls <- heard{n, v}
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WatchTeamCases returned %v when its context ended", err)
		}
	}()
	wait := func(what string, version int64) heard {
		t.Helper()
		tctx, tcancel := context.WithTimeout(ctx, 20*time.Second)
		defer tcancel()
		for {
			select {
			case h := <-calls:
				if h.version >= version {
					return h
				}
			case <-tctx.Done():
				t.Fatalf("%s: not heard", what)
			}
		}
	}
	wait("listening", 0) // the first call, once it listens

	c := store.TeamCase{ID: "team-1", Case: []byte(`{}`)}
	if _, err := other.PutTeamCase(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutTeamCase(ctx, c); err != nil {
		t.Fatal(err)
	}
	// Notifications come in commit order: had the other schema's put been
	// announced, it would have been heard before this one.
	if h := wait("a put by another replica", 1); h.n != 2 {
		t.Errorf("the put was the %d-th call, want the 2nd: a change in another schema was announced", h.n)
	}
	if ok, err := b.DeleteTeamCase(ctx, "team-1"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	wait("a delete by another replica", 2)
}
