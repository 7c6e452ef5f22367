package matcher

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/registry"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/incidentbot/incidentbot/cases"
)

// analyzerName is the bleve analyzer for case and query text in both
// languages (see terms).
const analyzerName = "incidentbot_text"

// indexVersion changes whenever the mapping or the analysis changes, so that
// an index cached on disk by an older version is never reused.
const indexVersion = "4"

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

// buildIndex indexes the library in memory or, when dir is not empty, in a
// directory there keyed by the library's content: an index built for the
// same cases by the same version is opened instead of rebuilt.
func buildIndex(lib *cases.Library, dir, scoring string) (idx bleve.Index, reused bool, err error) {
	m := newMapping(scoring)
	if dir == "" {
		idx, err = bleve.NewUsing("", m, scorch.Name, scorch.Name, nil)
		if err != nil {
			return nil, false, fmt.Errorf("create index: %w", err)
		}
		if err := fill(idx, lib); err != nil {
			idx.Close()
			return nil, false, err
		}
		return idx, false, nil
	}
	key := indexKey(lib) + "-v" + indexVersion + "-" + scoring
	path := filepath.Join(dir, "index-"+key+".bleve")
	if idx, err := bleve.Open(path); err == nil {
		if n, err := idx.DocCount(); err == nil && int(n) == lib.Len() {
			return idx, true, nil
		}
		idx.Close()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, fmt.Errorf("create index directory: %w", err)
	}
	// Build beside the final path and rename, so a crash mid-build never
	// leaves a half-built index to be reused.
	tmp, err := os.MkdirTemp(dir, "building-")
	if err != nil {
		return nil, false, fmt.Errorf("create index directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	building := filepath.Join(tmp, "index.bleve")
	idx, err = bleve.NewUsing(building, m, scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, false, fmt.Errorf("create index: %w", err)
	}
	if err := fill(idx, lib); err != nil {
		idx.Close()
		return nil, false, err
	}
	if err := idx.Close(); err != nil {
		return nil, false, fmt.Errorf("write index: %w", err)
	}
	os.RemoveAll(path) // a stale or broken index with this key
	if err := os.Rename(building, path); err != nil {
		return nil, false, fmt.Errorf("save index: %w", err)
	}
	removeStale(dir, filepath.Base(path))
	idx, err = bleve.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("open index: %w", err)
	}
	return idx, false, nil
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

func fill(idx bleve.Index, lib *cases.Library) error {
	const batchSize = 500
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
