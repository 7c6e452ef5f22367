package migrate_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/incidentbot/incidentbot/store/internal/migrate"
)

func TestLoadSortsByVersion(t *testing.T) {
	fsys := fstest.MapFS{
		"0010_later.sql":  {Data: []byte("B")},
		"0002_second.sql": {Data: []byte("A")},
		"README.md":       {Data: []byte("not a migration")},
	}
	ms, err := migrate.Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Version != 2 || ms[1].Version != 10 || ms[0].SQL != "A" || ms[1].Name != "0010_later.sql" {
		t.Errorf("Load = %+v, want versions 2 then 10", ms)
	}
}

func TestLoadRejects(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"no number":     {"init.sql": {}},
		"zero":          {"0000_init.sql": {}},
		"duplicate":     {"0001_a.sql": {}, "1_b.sql": {}},
		"no migrations": {},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := migrate.Load(fsys); err == nil {
				t.Error("Load succeeded, want an error")
			} else if !strings.Contains(err.Error(), "migration") {
				t.Errorf("error %q does not say what is wrong", err)
			}
		})
	}
}
