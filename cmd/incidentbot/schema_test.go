package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incidentbot/incidentbot/internal/pgtest"
)

// TestDBSchemaFlag: --db-schema puts the PostgreSQL tables in their own
// schema, and is refused for SQLite, where it would mean nothing.
func TestDBSchemaFlag(t *testing.T) {
	url := pgtest.Schema(t, "dbschema")
	name := "incidentbot_flag_test"
	ctx := context.Background()
	conn := pgtest.Absent(t, url, name)

	code, out, errOut := runCmd(t, "", map[string]string{"DATABASE_URL": url, "INCIDENTBOT_DB_SCHEMA": name}, "digest", "preview")
	if code != 0 {
		t.Fatalf("digest preview with INCIDENTBOT_DB_SCHEMA: exit %d: %s%s", code, out, errOut)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'incidentbot_schema_migrations'`, name).Scan(&n); err != nil || n != 1 {
		t.Errorf("migrations table in schema %s: %d, %v; want 1", name, n, err)
	}

	db := filepath.Join(t.TempDir(), "a.db")
	openStoreForTest(t, db)
	code, _, errOut = runCmd(t, "", nil, "digest", "preview", "--db", db, "--db-schema", name)
	if code == 0 || !strings.Contains(errOut, "PostgreSQL only") {
		t.Errorf("--db-schema with SQLite: exit %d: %s", code, errOut)
	}
}
