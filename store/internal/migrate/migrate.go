// Package migrate reads the versioned schema migrations that the store
// implementations embed. Each implementation applies them itself, in order,
// with the locking its database needs.
package migrate

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Migration is one schema change: the SQL in a file named
// "NNNN_description.sql", whose number is its version.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load returns the migrations in the *.sql files at the root of fsys, sorted
// by version. Versions must be positive and unique.
func Load(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	var ms []Migration
	seen := map[int]string{}
	for _, name := range names {
		num, _, ok := strings.Cut(path.Base(name), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql with NNNN > 0", name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migration %s: version %d already used by %s", name, v, prev)
		}
		seen[v] = name
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(data)})
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("no migrations found")
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	return ms, nil
}

// Table is the name of the table where the stores record the migrations
// applied. It is prefixed so that it cannot be another tool's: golang-migrate,
// dbmate and Rails all use schema_migrations.
const Table = "incidentbot_schema_migrations"

// OldTable is where versions before the prefix recorded migrations; a
// store adopts it (copies its rows to Table and drops it) only when its
// columns are those it had: version and applied_at.
const OldTable = "schema_migrations"

// NewerError is returned when the database's schema is newer than the
// migrations this build knows: a newer incidentbot upgraded it.
type NewerError struct {
	Have int // the database's latest version
	Know int // this build's latest version
}

func (e *NewerError) Error() string {
	return fmt.Sprintf("the database schema is at version %d, newer than this incidentbot knows (up to %d): "+
		"a newer incidentbot has upgraded it, and this one could misread or damage its data. "+
		"Run the newer version (or a later one); to go back to this one, restore a backup taken before the upgrade",
		e.Have, e.Know)
}

// Check returns a *NewerError when have, the latest version the database
// records, is past the last of ms.
func Check(have int, ms []Migration) error {
	if know := ms[len(ms)-1].Version; have > know {
		return &NewerError{Have: have, Know: know}
	}
	return nil
}
