package bot_test

import (
	"os"
	"testing"

	"github.com/incidentbot/incidentbot/internal/pgtest"
)

// TestMain says so when the PostgreSQL tests were skipped.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
