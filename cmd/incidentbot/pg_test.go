package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/incidentbot/incidentbot/internal/pgtest"
)

// TestMain has the tests share one index of the built-in library, and says
// so when the PostgreSQL tests were skipped.
func TestMain(m *testing.M) {
	remove, err := shareBuiltinIndex()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := pgtest.Main(m)
	remove()
	os.Exit(code)
}
