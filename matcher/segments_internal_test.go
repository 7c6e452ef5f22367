package matcher

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"

	"github.com/incidentbot/incidentbot/cases"
)

// mergeFromBatches merges libraries of more than n batches, for tests that
// cannot afford thousands of cases, and returns the undo.
func mergeFromBatches(n int) func() { return SetMergeFrom(n * batchSize) }

// TestBuiltinLibraryKeepsItsSegments: the built-in library, with room for
// a team's own cases, is not merged, so it is scored as it was measured.
func TestBuiltinLibraryKeepsItsSegments(t *testing.T) {
	set, err := cases.Builtin(cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(set.Cases) + 2*batchSize; n > mergeFrom {
		t.Errorf("the built-in library's %d cases and a thousand of a team's would be merged (from %d)", len(set.Cases), mergeFrom)
	}
}

func segments(t *testing.T, idx bleve.Index) int {
	t.Helper()
	n, err := segmentCount(idx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLargeLibrarySearchedInOneSegment: a library of more than mergeFrom
// cases (here lowered to two batches) is searched in one merged segment,
// in memory as on disk, since each segment costs every query its own
// dictionary and postings reads; it scores as one batch of all its cases
// would; the merged segments' files are not left behind; and building in
// memory leaves no temporary files.
func TestLargeLibrarySearchedInOneSegment(t *testing.T) {
	defer mergeFromBatches(2)()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	lib := RealLibrary(t, 2*batchSize+100)

	// Unmerged, the batches' segments would score differently: bleve's
	// BM25 takes a field's length from the terms of each segment's
	// dictionary, counting a term once per segment it is in.
	unmerged, err := bleve.NewUsing("", newMapping(BM25), scorch.Name, scorch.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unmerged.Close()
	if err := fill(unmerged, lib); err != nil {
		t.Fatal(err)
	}
	if n := segments(t, unmerged); n != 3 {
		t.Fatalf("unmerged index has %d segments, want 3", n)
	}
	// The reference: every case in one batch, so one segment from the start.
	ref, err := bleve.NewUsing("", newMapping(BM25), scorch.Name, scorch.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	b := ref.NewBatch()
	for _, c := range lib.Cases() {
		if err := b.Index(c.ID, caseDoc(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ref.Batch(b); err != nil {
		t.Fatal(err)
	}

	for _, dir := range []string{"", t.TempDir()} {
		m, err := New(lib, Options{IndexDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if n := segments(t, m.idx); n != 1 {
			t.Errorf("index dir %q: %d segments, want 1", dir, n)
		}
		if dir != "" {
			// The merged segments' files are not left behind.
			zaps, _ := filepath.Glob(filepath.Join(dir, "*", "store", "*.zap"))
			if len(zaps) != 1 {
				t.Errorf("index dir holds %d segment files, want the merged one: %v", len(zaps), zaps)
			}
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("index dir %q: temporary files left once the index is open: %v", dir, left)
		}
		sameScores(t, m, m.idx, "merged", ref, "in one batch")
		m.Close()
	}
}

// TestNoTemporaryDirectoryKeepsIndexInMemory: where no temporary directory
// can be made, a large library is still indexed, in memory, and the reason
// is logged.
func TestNoTemporaryDirectoryKeepsIndexInMemory(t *testing.T) {
	defer mergeFromBatches(1)()
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	var logged bytes.Buffer
	lib := RealLibrary(t, batchSize+1)
	m, err := New(lib, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if n := segments(t, m.idx); n != 2 {
		t.Errorf("%d segments, want the 2 batches in memory", n)
	}
	if !bytes.Contains(logged.Bytes(), []byte("temporary directory")) {
		t.Errorf("log does not say why the index is in memory: %q", logged.String())
	}
	ans, err := m.Match(context.Background(), "database connection pool exhausted", 3)
	if err != nil || len(ans.Results) == 0 {
		t.Fatalf("no answer from the index in memory: %v %v", ans, err)
	}
}

// TestHelperMergeOnFullDisk is the process TestMergeOnFullDiskDoesNotHang
// runs: files it writes may not grow past INCIDENTBOT_TEST_FILE_LIMIT
// bytes, room for each batch's segment but not for their merge.
func TestHelperMergeOnFullDisk(t *testing.T) {
	limit, _ := strconv.ParseUint(os.Getenv("INCIDENTBOT_TEST_FILE_LIMIT"), 10, 64)
	if limit == 0 {
		t.Skip("run by TestMergeOnFullDiskDoesNotHang")
	}
	defer mergeFromBatches(2)()
	signal.Ignore(syscall.SIGXFSZ) // a write past the limit fails instead
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Skipf("cannot limit file size: %v", err)
	}
	var logged bytes.Buffer
	m, err := New(RealLibrary(t, 2*batchSize+100), Options{
		IndexDir: t.TempDir(),
		Logger:   slog.New(slog.NewTextHandler(&logged, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ans, err := m.Match(context.Background(), "database connection pool exhausted", 3)
	if err != nil || len(ans.Results) == 0 {
		t.Fatalf("no answer: %v %v", ans, err)
	}
	fmt.Printf("answered; log: %s\n", strings.ReplaceAll(logged.String(), "\n", " | "))
}

// TestMergeOnFullDiskDoesNotHang: a merge that fails for want of disk is
// reported, and the matcher falls back to an index in memory; scorch alone
// retries such a merge without end, and waiting for it hung the start.
func TestMergeOnFullDiskDoesNotHang(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs RLIMIT_FSIZE")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang, not a slow machine
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperMergeOnFullDisk$", "-test.v")
	cmd.Env = append(os.Environ(), "INCIDENTBOT_TEST_FILE_LIMIT=3500000", "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the start hung on a merge that cannot be written:\n%s", out)
	}
	if err != nil {
		t.Fatalf("helper failed: %v\n%s", err, out)
	}
	if bytes.Contains(out, []byte("SKIP")) {
		t.Skipf("helper skipped:\n%s", out)
	}
	for _, want := range []string{"answered", "cannot save the search index on disk", "merge index", "keeping it in memory"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("helper output lacks %q:\n%s", want, out)
		}
	}
}

// TestIndexDirScoresAsInMemory: a library small enough to keep its
// batches' segments (here the most, four) keeps them on disk too, so that
// it scores the same with --index-dir as without, and on every start.
// Left to itself scorch merged some on disk, when its merger or persister
// got to them before the index was closed, and bleve's BM25 scores depend
// on the segments.
func TestIndexDirScoresAsInMemory(t *testing.T) {
	lib := RealLibrary(t, mergeFrom)
	mem, err := New(lib, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	disk, err := New(lib, Options{IndexDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer disk.Close()
	want := mergeFrom / batchSize
	if m, d := segments(t, mem.idx), segments(t, disk.idx); m != want || d != want {
		t.Fatalf("%d segments in memory, %d on disk; want %d, one per batch", m, d, want)
	}
	sameScores(t, mem, disk.idx, "on disk", mem.idx, "in memory")
}

// sameScores fails unless got and ref score the same hits for a few texts,
// the queries m makes of them: copies of a case tie, in whatever order the
// segments hold them, so only the scores are compared, rank by rank.
func sameScores(t *testing.T, m *Matcher, got bleve.Index, gotName string, ref bleve.Index, refName string) {
	t.Helper()
	for _, text := range []string{
		"p99 latency is up and the load balancer returns 502s after a deploy",
		"결제 API 응답 지연, DB 커넥션 풀 고갈",
	} {
		q, _, _ := m.textQuery(text, DetectLang(text))
		g, err := got.SearchInContext(context.Background(), bleve.NewSearchRequestOptions(q, 40, 0, false))
		if err != nil {
			t.Fatal(err)
		}
		r, err := ref.SearchInContext(context.Background(), bleve.NewSearchRequestOptions(q, 40, 0, false))
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Hits) != len(r.Hits) || len(g.Hits) == 0 {
			t.Fatalf("%q: %d hits %s, %d %s", text, len(g.Hits), gotName, len(r.Hits), refName)
		}
		for i := range g.Hits {
			if x, y := g.Hits[i], r.Hits[i]; math.Abs(x.Score-y.Score) > 1e-9*y.Score {
				t.Errorf("%q hit %d: %s %.6f %s, %s %.6f %s", text, i, x.ID, x.Score, gotName, y.ID, y.Score, refName)
			}
		}
	}
}
