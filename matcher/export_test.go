package matcher

import "time"

// SetLockWait shortens the wait for a locked cached index in tests.
func SetLockWait(d time.Duration) (restore func()) {
	old := lockWait
	lockWait = d
	return func() { lockWait = old }
}

// ResealIndex records the digest of the index files at path as they are now,
// so that a damage the digest would catch reaches the index code instead.
func ResealIndex(path string) error {
	sum, err := digestFiles(path)
	if err != nil {
		return err
	}
	return writeSum(path, sum)
}
