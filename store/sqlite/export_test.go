package sqlite

import "fmt"

// WithSchemaVersion makes Open apply the migrations only up to version, so
// that a test can build a database as an older version of the store left it.
func WithSchemaVersion(version int) Option {
	return func(s *Store) { s.upTo = version }
}

// WithMaxPages caps the database at n pages, as a full disk would: writes
// past it fail with SQLITE_FULL.
func WithMaxPages(n int) Option {
	return func(s *Store) { s.pragmas = append(s.pragmas, fmt.Sprintf("_pragma=max_page_count(%d)", n)) }
}
