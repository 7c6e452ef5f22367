package storetest

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/store"
)

// Database is one fresh database of a backend, for the migration suite:
// stores opened on it, and statements run on it beside them. The
// statements are the backend's own, since the dialects differ.
type Database struct {
	// Open opens a store on the database. upTo > 0 applies the
	// migrations only up to that version, as an older store left them.
	Open func(t *testing.T, upTo int) (store.Store, error)
	// DB reaches the same database directly.
	DB *sql.DB
	// Migrations is how many migrations the backend embeds.
	Migrations int
	// OtherToolsTable creates schema_migrations as golang-migrate makes it
	// in this dialect, holding version 20240101120000, not dirty.
	OtherToolsTable string
	// OldTableCount counts the tables named schema_migrations that the
	// store sees: 0 or 1.
	OldTableCount string
	// NewerVersion records version 9999 as applied in
	// incidentbot_schema_migrations.
	NewerVersion string
}

// RunMigrations runs the migration suite: how a store takes over a schema
// that an older store, an earlier version or another tool left. Each
// subtest calls newDatabase once.
func RunMigrations(t *testing.T, newDatabase func(t *testing.T) Database) {
	tests := []struct {
		name string
		fn   func(t *testing.T, d Database)
	}{
		{"UpgradeFromVersion1", testUpgradeFromVersion1},
		{"BesideAnotherToolsTable", testBesideAnotherToolsTable},
		{"UpgradeMovesOldMigrationsTable", testUpgradeMovesOldMigrationsTable},
		{"RefusesNewerSchema", testRefusesNewerSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newDatabase(t)) })
	}
}

// open opens a store on d, failing t when it cannot.
func (d Database) open(t *testing.T, upTo int) store.Store {
	t.Helper()
	s, err := d.Open(t, upTo)
	if err != nil {
		t.Fatalf("open the store: %v", err)
	}
	return s
}

// exec runs statements on d directly.
func (d Database) exec(t *testing.T, stmts string) {
	t.Helper()
	if _, err := d.DB.ExecContext(t.Context(), stmts); err != nil {
		t.Fatal(err)
	}
}

// checkMigrated checks that d records each of the backend's migrations
// once.
func (d Database) checkMigrated(t *testing.T) {
	t.Helper()
	var versions, max int
	if err := d.DB.QueryRowContext(t.Context(), `SELECT count(*), max(version) FROM incidentbot_schema_migrations`).Scan(&versions, &max); err != nil {
		t.Fatal(err)
	}
	if versions != d.Migrations || max != d.Migrations {
		t.Errorf("incidentbot_schema_migrations has %d rows up to version %d, want %d up to %[3]d", versions, max, d.Migrations)
	}
}

// testUpgradeFromVersion1 opens a database that an older store left at
// schema version 1, before the inbox, and checks that Open adds what came
// since and keeps what was there.
func testUpgradeFromVersion1(t *testing.T, d Database) {
	ctx := t.Context()
	old := d.open(t, 1)
	when := time.Date(2025, 3, 3, 12, 0, 0, 0, time.UTC)
	if err := old.RecordSuggestion(ctx, store.Suggestion{Key: "C1:1", Time: when}); err != nil {
		t.Fatal(err)
	}
	if ok, err := old.Claim(ctx, "Ev1", "a", time.Hour); err != nil || !ok {
		t.Fatalf("Claim = %v, %v", ok, err)
	}
	if _, err := old.InboxPut(ctx, store.InboxItem{Key: "Ev1"}, time.Minute); err == nil {
		t.Fatal("a version 1 database has an inbox already: the test builds the wrong schema")
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s := d.open(t, 0)
	defer s.Close()
	if got, err := s.Suggestions(ctx, when, when.Add(time.Second)); err != nil || len(got) != 1 {
		t.Errorf("Suggestions after the upgrade = %+v, %v; want the one recorded before", got, err)
	}
	if ok, err := s.Claim(ctx, "Ev1", "b", time.Hour); err != nil || ok {
		t.Errorf("Claim on a live claim after the upgrade = %v, %v; want false", ok, err)
	}
	if ok, err := s.InboxPut(ctx, store.InboxItem{Key: "Ev1", Payload: []byte{0xff}}, time.Minute); err != nil || !ok {
		t.Errorf("InboxPut after the upgrade = %v, %v; want true", ok, err)
	}
	if _, err := s.PutTeamCase(ctx, store.TeamCase{ID: "team-1", Case: []byte("{}")}); err != nil {
		t.Errorf("PutTeamCase after the upgrade: %v", err)
	}
	d.checkMigrated(t)
}

// testBesideAnotherToolsTable: a golang-migrate schema_migrations table
// where the store keeps its tables neither breaks the start nor is
// touched.
func testBesideAnotherToolsTable(t *testing.T, d Database) {
	ctx := t.Context()
	d.exec(t, d.OtherToolsTable)
	s, err := d.Open(t, 0)
	if err != nil {
		t.Fatalf("Open beside another tool's schema_migrations: %v", err)
	}
	defer s.Close()
	if err := s.RecordSuggestion(ctx, store.Suggestion{Key: "k", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var version int64
	var dirty bool
	if err := d.DB.QueryRowContext(ctx, `SELECT version, dirty FROM schema_migrations`).Scan(&version, &dirty); err != nil || version != 20240101120000 || dirty {
		t.Errorf("the other tool's table reads %d, %v, %v; want it untouched", version, dirty, err)
	}
	d.checkMigrated(t)
}

// testUpgradeMovesOldMigrationsTable: a database an earlier version made,
// with its migrations in schema_migrations, is taken over: the versions
// move to incidentbot_schema_migrations, the old table goes, the data
// stays.
func testUpgradeMovesOldMigrationsTable(t *testing.T, d Database) {
	ctx := t.Context()
	s := d.open(t, 0)
	if err := s.RecordSuggestion(ctx, store.Suggestion{Key: "before", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// As the earlier version left it.
	d.exec(t, `ALTER TABLE incidentbot_schema_migrations RENAME TO schema_migrations`)
	s, err := d.Open(t, 0)
	if err != nil {
		t.Fatalf("Open a database an earlier version made: %v", err)
	}
	defer s.Close()
	if got, err := s.Suggestions(ctx, time.Now().Add(-time.Hour), time.Now().Add(time.Hour)); err != nil || len(got) != 1 {
		t.Errorf("after the upgrade, Suggestions = %+v, %v; want the one recorded before", got, err)
	}
	var old int
	if err := d.DB.QueryRowContext(ctx, d.OldTableCount).Scan(&old); err != nil || old != 0 {
		t.Errorf("old schema_migrations: %d tables, %v; want it gone", old, err)
	}
	d.checkMigrated(t)
}

// testRefusesNewerSchema: a binary older than the database's schema stops
// at start with a message that says what happened and what to do.
func testRefusesNewerSchema(t *testing.T, d Database) {
	d.open(t, 0).Close()
	d.exec(t, d.NewerVersion)
	s, err := d.Open(t, 0)
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded on a schema newer than the binary")
	}
	for _, want := range []string{"version 9999", "newer than this incidentbot", "restore a backup"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
