package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// Indexing the built-in library and learning its tag model take tens of
// seconds under -race, and most tests run commands over that library
// unchanged. Those commands reopen one index of it, built once and kept on
// disk as --index-dir keeps it; libraries with case files, team cases or a
// taxonomy overlay are still indexed by each command, in memory.

// indexDir is the directory for the built-in library's index and model,
// made by shareBuiltinIndex.
var indexDir string

// builtinIndex returns indexDir once the first test that needs it has
// built the index there.
var builtinIndex = sync.OnceValues(func() (string, error) {
	if indexDir == "" {
		return "", errors.New("no directory for the built-in library's index: TestMain did not call shareBuiltinIndex")
	}
	tax := cases.DefaultTaxonomy()
	b, err := builtinCases(tax)
	if err != nil {
		return "", err
	}
	lib, _ := cases.NewLibrary(b)
	m, err := matcher.New(lib, matcher.Options{Taxonomy: tax, IndexDir: indexDir})
	if err != nil {
		return "", fmt.Errorf("index the built-in library in %s: %w", indexDir, err)
	}
	return indexDir, m.Close()
})

// builtinIndexCopy returns a copy of the directory of the built-in
// library's index, for a test that runs the program in another process:
// what that process writes there stays in the test's own copy.
func builtinIndexCopy(t *testing.T) string {
	t.Helper()
	dir, err := builtinIndex()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "index")
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// sharedMatcher is matcher.New, but reopens the built-in library's index
// from disk when lib is that library alone, indexed as a command indexes it.
func sharedMatcher(lib *cases.Library, opts matcher.Options) (*matcher.Matcher, error) {
	if opts.IndexDir == "" && isBuiltinOnly(lib, opts) {
		dir, err := builtinIndex()
		if err != nil {
			return nil, err
		}
		opts.IndexDir = dir
	}
	return matcher.New(lib, opts)
}

// isBuiltinOnly reports whether lib is the whole built-in library with the
// built-in taxonomy and nothing kept to a channel: what builtinIndex holds.
func isBuiltinOnly(lib *cases.Library, opts matcher.Options) bool {
	tax := cases.DefaultTaxonomy()
	if (opts.Taxonomy != nil && opts.Taxonomy != tax) || len(opts.Only) > 0 || (opts.Scoring != "" && opts.Scoring != matcher.BM25) {
		return false
	}
	b, err := builtinCases(tax)
	if err != nil || lib.Len() != len(b.Cases) {
		return false
	}
	for _, c := range lib.Cases() {
		if lib.Origin(c.ID) != cases.BuiltinSource {
			return false
		}
	}
	return true
}

// shareBuiltinIndex has the commands the tests run share the built-in
// library's index, in a directory that the returned function removes.
func shareBuiltinIndex() (remove func(), err error) {
	if indexDir, err = os.MkdirTemp("", "incidentbot-index"); err != nil {
		return nil, err
	}
	newMatcher = sharedMatcher
	return func() {
		newMatcher = matcher.New
		os.RemoveAll(indexDir)
	}, nil
}
