package sqlite

// WithSchemaVersion makes Open apply the migrations only up to version, so
// that a test can build a database as an older version of the store left it.
func WithSchemaVersion(version int) Option {
	return func(s *Store) { s.upTo = version }
}
