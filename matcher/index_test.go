package matcher_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentbot/incidentbot/matcher"
)

// newWithin runs matcher.New and fails the test if it has not returned
// within limit: a hang on a lock must show as a failure, not a stuck run.
func newWithin(t *testing.T, limit time.Duration, opts matcher.Options) (*matcher.Matcher, error) {
	t.Helper()
	type result struct {
		m   *matcher.Matcher
		err error
	}
	done := make(chan result, 1)
	go func() {
		m, err := matcher.New(testLibrary(t), opts)
		done <- result{m, err}
	}()
	select {
	case r := <-done:
		if r.m != nil {
			t.Cleanup(func() { r.m.Close() })
		}
		return r.m, r.err
	case <-time.After(limit):
		t.Fatalf("matcher.New did not return within %v: it waits on the index lock", limit)
		return nil, nil
	}
}

// syncBuffer is a log destination safe to read while written.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var (
	refOnce    sync.Once
	refAnswers []*matcher.Answer // the probes' answers from an index in memory
)

var probes = []string{"OOMKilled pods restarting", "x509: certificate has expired", "DNS resolution failing for internal services", "디스크가 가득 찼습니다"}

// sameAnswers checks that m answers the probes as a matcher on an index
// built in memory does.
func sameAnswers(t *testing.T, m *matcher.Matcher) {
	t.Helper()
	refOnce.Do(func() {
		ref, err := matcher.New(testLibrary(t), matcher.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer ref.Close()
		for _, q := range probes {
			a, err := ref.Match(context.Background(), q, 5)
			if err != nil {
				t.Fatal(err)
			}
			refAnswers = append(refAnswers, a)
		}
	})
	for i, q := range probes {
		want := refAnswers[i]
		got, err := m.Match(context.Background(), q, 5)
		if err != nil {
			t.Fatalf("Match(%q): %v", q, err)
		}
		if fmt.Sprintf("%.6v", scores(got)) != fmt.Sprintf("%.6v", scores(want)) {
			t.Errorf("Match(%q) = %v, want %v as from a fresh index", q, scores(got), scores(want))
		}
	}
}

func scores(a *matcher.Answer) []string {
	var out []string
	for _, r := range a.Results {
		out = append(out, fmt.Sprintf("%s %.6f", r.Case.ID, r.Score))
	}
	return out
}

// cachedIndex builds the test library's index in a new directory and
// returns the directory of the index itself.
func cachedIndex(t *testing.T) (dir, index string) {
	t.Helper()
	dir = t.TempDir()
	m := newMatcher(t, testLibrary(t), matcher.Options{IndexDir: dir})
	m.Close()
	found, _ := filepath.Glob(filepath.Join(dir, "index-*.bleve"))
	if len(found) != 1 {
		t.Fatalf("index directories in %s: %v", dir, found)
	}
	return dir, found[0]
}

// Reload with an unchanged library opens the cached index a second time in
// the same process while the first matcher still serves.
func TestIndexOpenTwiceInOneProcess(t *testing.T) {
	dir, _ := cachedIndex(t)
	first := newMatcher(t, testLibrary(t), matcher.Options{IndexDir: dir})
	second, err := newWithin(t, 30*time.Second, matcher.Options{IndexDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Reused() || !second.Reused() {
		t.Errorf("reused: first %v, second %v; want both to open the cached index", first.Reused(), second.Reused())
	}
	sameAnswers(t, first)
	sameAnswers(t, second)
	first.Close()
	sameAnswers(t, second) // closing one leaves the other working
}

// TestHelperHoldIndex is the second process of TestIndexSharedByTwoProcesses:
// it opens the index and holds it until its standard input closes.
func TestHelperHoldIndex(t *testing.T) {
	dir := os.Getenv("INCIDENTBOT_TEST_HOLD_INDEX")
	if dir == "" {
		t.Skip("run by TestIndexSharedByTwoProcesses")
	}
	m, err := matcher.New(testLibrary(t), matcher.Options{IndexDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	fmt.Printf("holding reused=%v\n", m.Reused())
	io.Copy(io.Discard, os.Stdin)
}

// Two processes with one index directory both start and both use it.
func TestIndexSharedByTwoProcesses(t *testing.T) {
	dir, _ := cachedIndex(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldIndex$")
	cmd.Env = append(os.Environ(), "INCIDENTBOT_TEST_HOLD_INDEX="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "holding reused=true") {
		t.Fatalf("other process: %q, %v", line, err)
	}
	m, err := newWithin(t, 30*time.Second, matcher.Options{IndexDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Reused() {
		t.Error("the second process rebuilt the index instead of sharing it")
	}
	sameAnswers(t, m)
}

// An index locked for writing by another program is waited for a bounded
// time; then the matcher says so and serves from an index in memory.
func TestIndexLockedElsewhereFallsBackToMemory(t *testing.T) {
	defer matcher.SetLockWait(300 * time.Millisecond)()
	dir, index := cachedIndex(t)
	// bbolt's lock is per open file, so this holds it against the matcher
	// just as another process would.
	db, err := bolt.Open(filepath.Join(index, "store", "root.bolt"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var logs syncBuffer
	m, err := newWithin(t, 30*time.Second, matcher.Options{IndexDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if m.Reused() {
		t.Error("reported the locked index as reused")
	}
	if !strings.Contains(logs.String(), "locked by another process") || !strings.Contains(logs.String(), "in memory") {
		t.Errorf("log does not say the index is locked and an index in memory is used:\n%s", logs.String())
	}
	sameAnswers(t, m)
}

// A damaged cached index is never used: whatever the damage, the matcher
// rebuilds it, answers as from a fresh index, and the rebuilt one is reused.
func TestDamagedIndexRebuilt(t *testing.T) {
	zap := func(t *testing.T, index string) string {
		found, _ := filepath.Glob(filepath.Join(index, "store", "*.zap"))
		if len(found) == 0 {
			t.Fatal("no .zap file in the index")
		}
		return found[0]
	}
	var rng *rand.Rand
	for i, tc := range []struct {
		name   string
		damage func(t *testing.T, index string)
		reseal bool // record the damaged files' digest, so the index code meets the damage
	}{
		{"random bytes over the segment", func(t *testing.T, index string) { scribble(t, zap(t, index), rng, 0, -1) }, false},
		{"random bytes, digest rewritten", func(t *testing.T, index string) { scribble(t, zap(t, index), rng, 0, -1) }, true},
		{"random bytes in the middle of the segment", func(t *testing.T, index string) { scribbleMiddle(t, zap(t, index), rng) }, false},
		{"random bytes in the middle, digest rewritten", func(t *testing.T, index string) { scribbleMiddle(t, zap(t, index), rng) }, true},
		{"one byte changed", func(t *testing.T, index string) {
			p := zap(t, index)
			info, _ := os.Stat(p)
			scribble(t, p, rng, info.Size()/3, 1)
		}, false},
		{"segment truncated", func(t *testing.T, index string) {
			p := zap(t, index)
			info, _ := os.Stat(p)
			if err := os.Truncate(p, info.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"root.bolt overwritten", func(t *testing.T, index string) {
			scribble(t, filepath.Join(index, "store", "root.bolt"), rng, 0, -1)
		}, true},
		{"digest missing", func(t *testing.T, index string) {
			if err := os.Remove(filepath.Join(index, "incidentbot.sha256")); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng = rand.New(rand.NewPCG(1, uint64(i))) // the same damage whichever cases run
			dir, index := cachedIndex(t)
			tc.damage(t, index)
			if tc.reseal {
				if err := matcher.ResealIndex(index); err != nil {
					t.Fatal(err)
				}
			}
			var logs syncBuffer
			m, err := newWithin(t, time.Minute, matcher.Options{IndexDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if m.Reused() {
				t.Error("the damaged index was reused")
			}
			if !strings.Contains(logs.String(), "cannot be used; rebuilding") {
				t.Errorf("the rebuild was not logged:\n%s", logs.String())
			}
			sameAnswers(t, m)
			again := newMatcher(t, testLibrary(t), matcher.Options{IndexDir: dir})
			if !again.Reused() {
				t.Error("the rebuilt index was not reused at the next start")
			}
		})
	}
}

// scribbleMiddle overwrites the middle half of a file with random bytes.
func scribbleMiddle(t *testing.T, path string, rng *rand.Rand) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	scribble(t, path, rng, info.Size()/4, info.Size()/2)
}

// scribble overwrites n bytes of the file from off (n < 0: to its end) with
// random bytes different from those there.
func scribble(t *testing.T, path string, rng *rand.Rand, off, n int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	end := int64(len(data))
	if n >= 0 {
		end = off + n
	}
	for i := off; i < end; i++ {
		data[i] ^= byte(1 + rng.IntN(255))
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
