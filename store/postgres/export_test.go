package postgres

// WithSchemaVersion makes Open apply the migrations only up to version, so
// that a test can build a schema as an older version of the store left it.
func WithSchemaVersion(version int) Option {
	return func(s *Store) { s.upTo = version }
}

// LockSpace is the first key of the package's advisory locks.
const LockSpace = lockSpace
