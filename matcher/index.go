package matcher

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/registry"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/incidentbot/incidentbot/cases"
)

// analyzerName is the bleve analyzer for case and query text in both
// languages (see terms).
const analyzerName = "incidentbot_text"

// indexVersion changes whenever the mapping, the analysis or how the
// segments are written changes, so that an index cached on disk by an older
// version is never reused (8: a library of up to mergeFrom cases keeps a
// segment per batch on disk, as in memory).
const indexVersion = "8"

func init() {
	err := registry.RegisterAnalyzer(analyzerName, func(map[string]any, *registry.Cache) (analysis.Analyzer, error) {
		return textAnalyzer{}, nil
	})
	if err != nil {
		panic(err)
	}
}

// textAnalyzer adapts terms to bleve.
type textAnalyzer struct{}

func (textAnalyzer) Analyze(input []byte) analysis.TokenStream {
	var ts analysis.TokenStream
	pos := 0
	terms(string(input), func(term string, start, end int) {
		pos++
		ts = append(ts, &analysis.Token{Term: []byte(term), Start: start, End: end, Position: pos, Type: analysis.AlphaNumeric})
	})
	return ts
}

// The text fields of an indexed case, with how much a match in each counts.
// Symptoms text describes what responders saw, so it counts most.
var textFields = []struct {
	name  string
	boost float64
	get   func(c *cases.Case) cases.Text
}{
	{"title", 1.2, func(c *cases.Case) cases.Text { return c.Title }},
	{"symptoms", 1.5, func(c *cases.Case) cases.Text { return c.SymptomsText }},
	{"summary", 0.6, func(c *cases.Case) cases.Text { return c.Summary }},
	{"trigger", 0.8, func(c *cases.Case) cases.Text { return c.Trigger }},
}

// Keyword fields, for filters.
const (
	fieldTag  = "tag"  // "symptom:high-latency", "component:cdn", ...
	fieldOrg  = "org"  // lower case
	fieldDate = "date" // YYYY-MM-DD as written
)

func fieldName(name string, lang cases.Lang) string { return name + "_" + string(lang) }

func newMapping(scoring string) mapping.IndexMapping {
	im := bleve.NewIndexMapping()
	im.ScoringModel = scoring
	im.DefaultAnalyzer = analyzerName
	dm := bleve.NewDocumentStaticMapping()
	for _, f := range textFields {
		for _, lang := range []cases.Lang{cases.English, cases.Korean} {
			fm := bleve.NewTextFieldMapping()
			fm.Analyzer = analyzerName
			fm.Store = false
			fm.IncludeTermVectors = false // explanations analyse the shown cases instead
			fm.IncludeInAll = false
			// Doc values keep every case's terms again, for sorting and
			// faceting on a field; text is only searched.
			fm.DocValues = false
			dm.AddFieldMappingsAt(fieldName(f.name, lang), fm)
		}
	}
	for _, name := range []string{fieldTag, fieldOrg, fieldDate} {
		fm := bleve.NewKeywordFieldMapping()
		fm.Analyzer = keyword.Name
		fm.Store = false
		fm.IncludeInAll = false
		fm.IncludeTermVectors = false
		dm.AddFieldMappingsAt(name, fm)
	}
	im.DefaultMapping = dm
	return im
}

func caseDoc(c *cases.Case) map[string]any {
	doc := map[string]any{}
	for _, f := range textFields {
		t := f.get(c)
		doc[fieldName(f.name, cases.English)] = t.En
		doc[fieldName(f.name, cases.Korean)] = t.Ko
	}
	var tags []string
	for _, s := range c.Symptoms {
		tags = append(tags, "symptom:"+s)
	}
	for _, s := range c.Components {
		tags = append(tags, "component:"+s)
	}
	for _, s := range c.Contributing {
		tags = append(tags, "contributing:"+s)
	}
	if c.RootCause != "" {
		tags = append(tags, "root_cause:"+c.RootCause)
	}
	doc[fieldTag] = tags
	doc[fieldOrg] = []string{strings.ToLower(c.Org), strings.ToLower(c.OrgSlug)}
	doc[fieldDate] = c.Date
	return doc
}

// lockWait bounds how long opening a cached index waits for a lock held by
// another process. Cached indexes are opened read-only, which share the lock,
// so only a process that holds one for writing (an older version of this
// program, or another tool) makes it wait.
var lockWait = 5 * time.Second

// sumName is the file, inside a cached index's directory, that holds the
// SHA-256 of every other file there. It is written once the index is built;
// an index whose files no longer match it is not reused.
const sumName = "incidentbot.sha256"

// buildIndex indexes the library in memory or, when dir is not empty, in a
// directory there keyed by the library's content: an index built for the
// same cases by the same version is opened instead of rebuilt. It also
// returns the index's term counts (see termCounts).
//
// A cached index is opened read-only, so other matchers of this process and
// other processes may open it at the same time. One that another process
// holds locked past lockWait, or that cannot be written, is replaced by an
// index in memory; one that is corrupt is rebuilt. Each is logged.
func buildIndex(lib *cases.Library, dir, scoring string, log *slog.Logger) (idx bleve.Index, df map[string]int, reused bool, err error) {
	if dir == "" {
		idx, df, err = memoryIndex(lib, scoring, log)
		return idx, df, false, err
	}
	key := indexKey(lib) + "-v" + indexVersion + "-" + scoring
	path := filepath.Join(dir, "index-"+key+".bleve")
	idx, df, err = openCached(path, lib)
	switch {
	case err == nil:
		return idx, df, true, nil
	case errors.Is(err, bolterrors.ErrTimeout):
		log.Warn("the cached search index is locked by another process; using an index in memory",
			"path", path, "waited", lockWait.String(), "err", err)
		idx, df, err = memoryIndex(lib, scoring, log)
		return idx, df, false, err
	case !errors.Is(err, fs.ErrNotExist):
		log.Warn("the cached search index cannot be used; rebuilding it", "path", path, "err", err)
	}
	if err := saveIndex(lib, dir, path, scoring); err != nil {
		log.Warn("cannot save the search index on disk; using an index in memory", "dir", dir, "err", err)
		idx, df, err = memoryIndex(lib, scoring, log)
		return idx, df, false, err
	}
	removeStale(dir, filepath.Base(path))
	idx, df, err = openCached(path, lib)
	if err != nil {
		log.Warn("cannot open the search index just built; using an index in memory", "path", path, "err", err)
		idx, df, err = memoryIndex(lib, scoring, log)
	}
	return idx, df, false, err
}

// memoryIndex builds the library's index in memory. A library of more than
// mergeFrom cases is built in a temporary directory instead and merged
// there into one segment, then opened from it: in memory bleve cannot merge
// the segment each batch makes, and every query pays for each segment
// (20 of them made a 10,000-case match take a third longer), while
// one batch of all the cases would need several times the memory. The
// directory is removed as soon as the index is open where the system
// allows it (the open files stay readable), and otherwise when it is
// closed. When it cannot be made, the index stays in memory, unmerged.
func memoryIndex(lib *cases.Library, scoring string, log *slog.Logger) (bleve.Index, map[string]int, error) {
	if lib.Len() > mergeFrom {
		idx, df, err := scratchIndex(lib, scoring)
		if err == nil {
			return idx, df, nil
		}
		log.Warn("cannot build the search index in a temporary directory; keeping it in memory, where it is slower to search",
			"err", err)
	}
	idx, err := bleve.NewUsing("", newMapping(scoring), scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("create index: %w", err)
	}
	if err := fill(idx, lib); err != nil {
		idx.Close()
		return nil, nil, err
	}
	df, err := termCounts(idx)
	if err != nil {
		idx.Close()
		return nil, nil, err
	}
	return idx, df, nil
}

// scratchIndex builds the library's index in a new temporary directory and
// opens it read-only; see memoryIndex.
func scratchIndex(lib *cases.Library, scoring string) (bleve.Index, map[string]int, error) {
	dir, err := os.MkdirTemp("", "incidentbot-index-")
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(dir, "index.bleve")
	if err := writeIndex(lib, path, scoring); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	idx, err := bleve.OpenUsing(path, map[string]any{"read_only": true})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("open index: %w", err)
	}
	df, err := termCounts(idx)
	if err != nil {
		idx.Close()
		os.RemoveAll(dir)
		return nil, nil, err
	}
	os.RemoveAll(dir) // where open files cannot be removed, Close does it
	return removedOnClose{idx, dir}, df, nil
}

// removedOnClose is an index whose directory is removed when it is closed.
type removedOnClose struct {
	searchIndex // not bleve.Index: a field of that name would hide its Index method
	dir         string
}

type searchIndex = bleve.Index

func (r removedOnClose) Close() error {
	err := r.searchIndex.Close()
	os.RemoveAll(r.dir)
	return err
}

// openCached opens the index saved at path for lib, read-only, after
// checking its files against their recorded digest. A panic of the index
// code on data the digest did not catch is returned as an error. The error
// wraps fs.ErrNotExist when there is no index at path, and bbolt's
// ErrTimeout when another process holds it locked.
func openCached(path string, lib *cases.Library) (idx bleve.Index, df map[string]int, err error) {
	if err := verifyIndex(path); err != nil {
		return nil, nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			if idx != nil {
				idx.Close()
			}
			idx, df, err = nil, nil, fmt.Errorf("read index: %v", r)
		}
	}()
	idx, err = bleve.OpenUsing(path, map[string]any{"read_only": true, "bolt_timeout": lockWait.String()})
	if err != nil {
		return nil, nil, fmt.Errorf("open index: %w", err)
	}
	if n, err := idx.DocCount(); err != nil || int(n) != lib.Len() {
		idx.Close()
		return nil, nil, fmt.Errorf("index holds %d cases, want %d (%v)", n, lib.Len(), err)
	}
	if df, err = termCounts(idx); err != nil {
		idx.Close()
		return nil, nil, err
	}
	return idx, df, nil
}

// saveIndex builds the library's index beside path and renames it there, so
// a crash mid-build never leaves a half-built index to be reused.
func saveIndex(lib *cases.Library, dir, path, scoring string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create index directory: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "building-")
	if err != nil {
		return fmt.Errorf("create index directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	building := filepath.Join(tmp, "index.bleve")
	if err := writeIndex(lib, building, scoring); err != nil {
		return err
	}
	sum, err := digestFiles(building)
	if err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	if err := writeSum(building, sum); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	os.RemoveAll(path) // a stale or broken index with this key
	if err := os.Rename(building, path); err != nil {
		return fmt.Errorf("save index: %w", err)
	}
	return nil
}

func writeSum(path, sum string) error {
	return os.WriteFile(filepath.Join(path, sumName), []byte(sum+"\n"), 0o644)
}

// verifyIndex checks the files of the index at path against the digest
// recorded when it was built.
func verifyIndex(path string) error {
	want, err := os.ReadFile(filepath.Join(path, sumName))
	if err != nil {
		if _, serr := os.Stat(path); errors.Is(serr, fs.ErrNotExist) {
			return fmt.Errorf("no index: %w", fs.ErrNotExist)
		}
		return fmt.Errorf("read index digest: %v", err) // not ErrNotExist: the index is there
	}
	got, err := digestFiles(path)
	if err != nil {
		return fmt.Errorf("read index: %w", err)
	}
	if got != strings.TrimSpace(string(want)) {
		return errors.New("the index files do not match their recorded digest: they were changed or damaged")
	}
	return nil
}

// digestFiles hashes the names, sizes and contents of the files below dir,
// except the digest file itself.
func digestFiles(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() || rel == sumName {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), info.Size())
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// indexKey is a digest of what the index holds of a library: ids, the
// searched text and the keyword fields. Cheaper than hashing whole cases,
// and unchanged by edits that do not touch the index.
func indexKey(lib *cases.Library) string {
	h := sha256.New()
	w := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		io.WriteString(h, s)
	}
	for _, c := range lib.Cases() {
		w(c.ID)
		for _, f := range textFields {
			t := f.get(c)
			w(t.En)
			w(t.Ko)
		}
		for _, t := range caseDoc(c)[fieldTag].([]string) {
			w(t)
		}
		w(c.Org)
		w(c.OrgSlug)
		w(c.Date)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// removeStale deletes indexes of other library versions from dir.
func removeStale(dir, keep string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "index-") && strings.HasSuffix(e.Name(), ".bleve") && e.Name() != keep {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// writeIndex builds the library's index at path; one of more than
// mergeFrom cases is merged into one segment: a query reads each segment's
// term dictionaries and postings apart, so the 20 a 10,000-case library's
// batches make cost it a third longer than one. Merging 10,000 cases takes
// a fraction of a second.
//
// A smaller library keeps one segment per batch, as in memory, so that it
// scores the same either way and on every start: left to itself, scorch's
// merger combines segments it reaches before the index is closed, which
// depends on timing (2,000 cases made two segments on disk and four in
// memory), and bleve's BM25 scores depend on the segments.
func writeIndex(lib *cases.Library, path, scoring string) error {
	merge := lib.Len() > mergeFrom
	config := map[string]any{"asyncErrorCallbackName": asyncErrorsName}
	if !merge {
		// Below this many threads waiting, scorch's persister merges
		// the batches waiting to be written, as timing has it; at 0 it
		// never does. (The merger below was what merged in the runs
		// measured; this closes the persister's way too.)
		config["scorchPersisterOptions"] = map[string]any{"MemoryPressurePauseThreshold": 0}
		// The merger's budget is the library's size over its smallest
		// segment's, raised to this floor (2,000 by default, which made
		// every small library's budget one segment): at 1 the budget is
		// at least the number of batches. (A library merged into one
		// segment keeps the defaults: with this floor its merged segment
		// cost a 10,000-case match 840 more allocations.)
		config["scorchMergePlanOptions"] = map[string]any{"FloorSegmentSize": 1}
	}
	idx, err := bleve.NewUsing(path, newMapping(scoring), scorch.Name, scorch.Name, config)
	if err != nil {
		return fmt.Errorf("create index: %w", err)
	}
	if err := fill(idx, lib); err != nil {
		idx.Close()
		return err
	}
	if !merge {
		if err := idx.Close(); err != nil {
			return fmt.Errorf("write index: %w", err)
		}
		return nil
	}
	return mergeAndClose(idx, path)
}

// mergeAndClose merges the index on disk at path into one segment and
// closes it. A merge that fails (a full disk, say) is an error, not a wait:
// scorch retries it without end and its ForceMerge waits for it, so the
// failure is taken from scorch's error callback and the index closed,
// which ends both.
func mergeAndClose(idx bleve.Index, path string) error {
	closeIndex := sync.OnceValue(idx.Close) // scorch cannot be closed twice
	defer closeIndex()
	live, err := forceMerge(idx, path, closeIndex)
	if err != nil {
		return fmt.Errorf("merge index: %w", err)
	}
	if err := closeIndex(); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	// scorch removes the merged segments' files lazily, and closing first
	// leaves them behind: they would double the index on disk.
	for dir := range live {
		files, _ := filepath.Glob(filepath.Join(dir, "*.zap"))
		for _, f := range files {
			if !live[dir][filepath.Base(f)] {
				os.Remove(f)
			}
		}
	}
	return nil
}

// forceMerge merges the index at path into one segment and returns the
// files of the segments left. When scorch reports the merge failed, it
// calls closeIndex, the only thing that ends ForceMerge's wait.
func forceMerge(idx bleve.Index, path string, closeIndex func() error) (map[string]map[string]bool, error) {
	adv, err := idx.Advanced()
	if err != nil {
		return nil, err
	}
	s, ok := adv.(*scorch.Scorch)
	if !ok {
		return nil, fmt.Errorf("engine %T cannot merge", adv)
	}
	failed := make(chan error, 1)
	asyncErrors.Store(path, failed)
	defer asyncErrors.Delete(path)
	done := make(chan error, 1)
	go func() { done <- s.ForceMerge(context.Background(), &mergeplan.SingleSegmentMergePlanOptions) }()
	select {
	case err = <-done:
	case err = <-failed:
		closeIndex()
		<-done
	}
	if err != nil {
		return nil, err
	}
	return segmentFiles(s)
}

// segmentFiles returns the files of the index's current segments, by
// directory.
func segmentFiles(s *scorch.Scorch) (map[string]map[string]bool, error) {
	r, err := s.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return nil, fmt.Errorf("reader %T has no segments", r)
	}
	out := map[string]map[string]bool{}
	for _, seg := range snap.Segments() {
		p, ok := seg.Segment().(segment.PersistedSegment)
		if !ok {
			return nil, fmt.Errorf("segment %T not on disk", seg.Segment())
		}
		dir := filepath.Dir(p.Path())
		if out[dir] == nil {
			out[dir] = map[string]bool{}
		}
		out[dir][filepath.Base(p.Path())] = true
	}
	return out, nil
}

// asyncErrors holds, by an index's path, where the errors of its
// background work (persisting, merging) go while it is being written.
var asyncErrors sync.Map

const asyncErrorsName = "incidentbot"

func init() {
	// scorch names the index by its store, a directory inside the path.
	scorch.RegistryAsyncErrorCallbacks[asyncErrorsName] = func(err error, store string) {
		for _, p := range []string{store, filepath.Dir(store)} {
			if ch, ok := asyncErrors.Load(p); ok {
				select {
				case ch.(chan error) <- err:
				default: // the first failure is enough
				}
				return
			}
		}
	}
}

// batchSize is how many cases are analysed and indexed at once. Each batch
// makes a segment; a batch holds all its cases' analysed text, so memory
// grows with it faster than the cases do (one batch of 10,000 cases peaks
// at four times the memory of batches of 500).
const batchSize = 500

// mergeFrom is the most cases an index keeps in the segments its batches
// made. Merged, bleve's BM25 scores change a little: it takes a field's
// average length from its dictionary, and across segments a term counts
// once per segment. A library the size of the built-in one with a team's
// own cases (two or three batches) is scored as every figure in the README
// was measured, and its few segments cost a query little (four cost a
// 2,000-case match 13% more: BenchmarkSegments2k); a library of
// thousands of cases is merged, for speed. (A var for tests.)
var mergeFrom = 4 * batchSize

func fill(idx bleve.Index, lib *cases.Library) error {
	b := idx.NewBatch()
	for _, c := range lib.Cases() {
		if err := b.Index(c.ID, caseDoc(c)); err != nil {
			return fmt.Errorf("index case %s: %w", c.ID, err)
		}
		if b.Size() >= batchSize {
			if err := idx.Batch(b); err != nil {
				return fmt.Errorf("index cases: %w", err)
			}
			b = idx.NewBatch()
		}
	}
	if err := idx.Batch(b); err != nil && !errors.Is(err, bleve.ErrorEmptyID) {
		return fmt.Errorf("index cases: %w", err)
	}
	return nil
}

// Scoring models the index can use; see Options.Scoring.
const (
	BM25  = index.BM25Scoring
	TFIDF = index.TFIDFScoring
)
