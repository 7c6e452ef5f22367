// Package matcher finds the past incidents most like a piece of free text: an
// alert, a message in an incident channel, a lookup. It extracts the
// symptoms and components the text signals (in English or Korean), searches
// the case library's text with bleve, ranks cases by shared tags and text
// relevance together, and explains each match. It is the only package that
// imports bleve.
package matcher

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/incidentbot/incidentbot/cases"
)

// DefaultFloor is the confidence below which a case is not suggested.
const DefaultFloor = 0.30

// Mode chooses what the ranking uses; the evaluation compares them.
type Mode int

const (
	// Combined ranks by shared tags and text relevance together.
	Combined Mode = iota
	// TextOnly ranks by bleve's text relevance alone, with no tags and no
	// confidence floor: the baseline the evaluation compares against.
	TextOnly
)

// Options configure a Matcher.
type Options struct {
	// Taxonomy supplies tag labels and phrases; cases.DefaultTaxonomy() when nil.
	Taxonomy *cases.Taxonomy
	// IndexDir, when set, keeps the bleve index on disk there, reused while
	// the library is unchanged. Empty means in memory.
	IndexDir string
	// Scoring is bleve's scoring model, BM25 (the default) or TFIDF.
	Scoring string
	// Floor is the confidence floor (0 to 1); DefaultFloor when zero.
	Floor float64
	// Mode chooses the ranking; Combined by default.
	Mode Mode
	// Tuning overrides DefaultTuning when set.
	Tuning *Tuning
	// Logger receives what goes wrong with the index on disk and is worked
	// around (a lock held elsewhere, a damaged index rebuilt); nil discards.
	Logger *slog.Logger
}

// Matcher answers which cases of a library are most like a text. It is safe
// for concurrent use.
type Matcher struct {
	lib   *cases.Library
	tax   *cases.Taxonomy
	idx   bleve.Index
	ext   *Extractor
	opts  Options
	reuse bool

	byTag map[string][]*cases.Case // "symptom:x" -> cases
	keys  map[*cases.Case][]string // a case's tag keys
	idf   map[string]float64
	df    map[string]int // index term -> cases whose text has it (most over fields)

	closeOnce sync.Once
	closeErr  error
}

// New indexes the library.
func New(lib *cases.Library, opts Options) (*Matcher, error) {
	if opts.Taxonomy == nil {
		opts.Taxonomy = cases.DefaultTaxonomy()
	}
	if opts.Scoring == "" {
		opts.Scoring = BM25
	}
	if opts.Floor == 0 {
		opts.Floor = DefaultFloor
	}
	if opts.Tuning == nil {
		t := DefaultTuning
		opts.Tuning = &t
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	idx, df, reused, err := buildIndex(lib, opts.IndexDir, opts.Scoring, opts.Logger)
	if err != nil {
		return nil, err
	}
	m := &Matcher{lib: lib, tax: opts.Taxonomy, idx: idx, ext: NewExtractor(opts.Taxonomy), opts: opts, reuse: reused, df: df,
		byTag: map[string][]*cases.Case{}, idf: map[string]float64{}, keys: map[*cases.Case][]string{}}
	for _, c := range lib.Cases() {
		m.keys[c] = tagKeys(c)
		for _, k := range m.keys[c] {
			m.byTag[k] = append(m.byTag[k], c)
		}
	}
	n := float64(max(lib.Len(), 1))
	for k, cs := range m.byTag {
		m.idf[k] = math.Log(1 + n/float64(len(cs)))
	}
	return m, nil
}

// termCounts reads, from the index's dictionaries, how many cases contain
// each term in any text field.
func termCounts(idx bleve.Index) (map[string]int, error) {
	df := map[string]int{}
	for _, f := range textFields {
		for _, l := range []cases.Lang{cases.English, cases.Korean} {
			d, err := idx.FieldDict(fieldName(f.name, l))
			if err != nil {
				return nil, fmt.Errorf("read index dictionary: %w", err)
			}
			for e, err := d.Next(); e != nil && err == nil; e, err = d.Next() {
				if c := int(e.Count); c > df[e.Term] {
					df[e.Term] = c
				}
			}
			d.Close()
		}
	}
	return df, nil
}

// Reused reports whether the index was opened from disk rather than built.
func (m *Matcher) Reused() bool { return m.reuse }

// Close releases the index. It may be called more than once.
func (m *Matcher) Close() error {
	m.closeOnce.Do(func() { m.closeErr = m.idx.Close() })
	return m.closeErr
}

// Library returns the library the matcher answers from.
func (m *Matcher) Library() *cases.Library { return m.lib }

// Taxonomy returns the taxonomy the matcher labels tags with.
func (m *Matcher) Taxonomy() *cases.Taxonomy { return m.tax }

func tagKeys(c *cases.Case) []string {
	var keys []string
	for _, s := range c.Symptoms {
		keys = append(keys, "symptom:"+s)
	}
	for _, s := range c.Components {
		keys = append(keys, "component:"+s)
	}
	return keys
}

// Tag is a tag id with its label in the answer's language.
type Tag struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// Result is one suggested case and why it matched.
type Result struct {
	Case       *cases.Case
	Score      float64 // 0 to 1
	Symptoms   []Tag   // symptoms the text and the case share
	Components []Tag   // components the text and the case share
	Terms      []string
	TagScore   float64 // share of the query's tags the case carries, weighted by rarity (0 to 1)
	TextScore  float64 // bleve's relevance score of the case's text (0 when only tags found it)
}

// Answer is what the matcher says about a text.
type Answer struct {
	Lang       cases.Lang
	Symptoms   []Signal // symptoms the text signals
	Components []Signal // components the text signals
	Results    []Result
}

// resolvedNotice matches alerts that announce the end of a problem.
var resolvedNotice = regexp.MustCompile(`(?i)^\W*(\[\s*(resolved|ok|recovered|해결|복구|정상)[^\]]*\]|(resolved|recovered|ok)\s*:|(해결|복구|정상화)(됨|완료)?\s*:)`)

// votedPhrase is the Phrase of a tag voted by the nearest cases.
const votedPhrase = "similar cases"

// maxQueryWords bounds the words sent to bleve for one text.
const maxQueryWords = 80

// Match returns up to top cases most like text, best first, each above the
// confidence floor. Text that signals nothing (greetings, thanks, a resolved
// notice) gets no results.
func (m *Matcher) Match(ctx context.Context, text string, top int) (*Answer, error) {
	ans := &Answer{Lang: DetectLang(text)}
	if top <= 0 || strings.TrimSpace(text) == "" || resolvedNotice.MatchString(text) {
		return ans, nil
	}
	return m.rank(ctx, ans, text, Filters{}, top, true)
}

// Rank returns the top cases most like text with no confidence floor: the
// ranking itself, for evaluation and for "show more" lookups that must
// answer something.
func (m *Matcher) Rank(ctx context.Context, text string, top int) (*Answer, error) {
	ans := &Answer{Lang: DetectLang(text)}
	if top <= 0 || strings.TrimSpace(text) == "" {
		return ans, nil
	}
	return m.rank(ctx, ans, text, Filters{}, top, false)
}

// Search answers a lookup: free text with optional filters (see ParseQuery).
// With filters and no text it lists the matching cases, newest first; the
// confidence floor applies only to text without filters.
func (m *Matcher) Search(ctx context.Context, q string, top int) (*Answer, error) {
	text, f, err := ParseQuery(q)
	if err != nil {
		return nil, err
	}
	if err := m.checkFilters(f); err != nil {
		return nil, err
	}
	ans := &Answer{Lang: DetectLang(text)}
	if top <= 0 {
		return ans, nil
	}
	if strings.TrimSpace(text) == "" {
		if f.Empty() {
			return ans, nil
		}
		return m.list(ctx, ans, f, top)
	}
	return m.rank(ctx, ans, text, f, top, f.Empty())
}

func (m *Matcher) checkFilters(f Filters) error {
	check := func(kind cases.Kind, prefix string, ids []string) error {
		for _, id := range ids {
			if _, ok := m.tax.Lookup(kind, id); ok || len(m.byTag[prefix+id]) > 0 {
				continue
			}
			if kind == cases.KindSymptom || kind == cases.KindComponent {
				return fmt.Errorf("%s:%s: no such %s; ids look like %s", prefix[:len(prefix)-1], id, kind, m.examples(kind))
			}
			return fmt.Errorf("%s%s: no such %s; ids look like %s", prefix, id, kind, m.examples(kind))
		}
		return nil
	}
	if err := check(cases.KindSymptom, "symptom:", f.Symptoms); err != nil {
		return err
	}
	if err := check(cases.KindComponent, "component:", f.Components); err != nil {
		return err
	}
	if err := check(cases.KindRootCause, "root_cause:", f.RootCauses); err != nil {
		return err
	}
	return check(cases.KindContributing, "contributing:", f.Contributing)
}

func (m *Matcher) examples(kind cases.Kind) string {
	var ids []string
	for _, t := range m.tax.Tags(kind) {
		if len(ids) == 4 {
			break
		}
		ids = append(ids, t.ID)
	}
	return strings.Join(ids, ", ")
}

// filterQuery turns filters into a bleve query, or nil.
func filterQuery(f Filters) query.Query {
	var must []query.Query
	term := func(field, value string) {
		q := bleve.NewTermQuery(value)
		q.SetField(field)
		must = append(must, q)
	}
	for _, s := range f.Symptoms {
		term(fieldTag, "symptom:"+s)
	}
	for _, s := range f.Components {
		term(fieldTag, "component:"+s)
	}
	for _, s := range f.RootCauses {
		term(fieldTag, "root_cause:"+s)
	}
	for _, s := range f.Contributing {
		term(fieldTag, "contributing:"+s)
	}
	if len(f.Orgs) > 0 {
		var any []query.Query
		for _, o := range f.Orgs {
			q := bleve.NewTermQuery(o)
			q.SetField(fieldOrg)
			any = append(any, q)
		}
		must = append(must, bleve.NewDisjunctionQuery(any...))
	}
	if f.Since != "" {
		inclusive := true
		q := bleve.NewTermRangeInclusiveQuery(f.Since, "", &inclusive, nil)
		q.SetField(fieldDate)
		must = append(must, q)
	}
	if len(must) == 0 {
		return nil
	}
	return bleve.NewConjunctionQuery(must...)
}

// search runs a bleve request, turning a panic inside bleve into an error.
func (m *Matcher) search(ctx context.Context, req *bleve.SearchRequest) (res *bleve.SearchResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("search failed inside bleve: %v", r)
		}
	}()
	res, err = m.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	return res, nil
}

func (m *Matcher) list(ctx context.Context, ans *Answer, f Filters, top int) (*Answer, error) {
	req := bleve.NewSearchRequestOptions(filterQuery(f), top, 0, false)
	req.SortBy([]string{"-" + fieldDate, "_id"})
	res, err := m.search(ctx, req)
	if err != nil {
		return nil, err
	}
	for _, h := range res.Hits {
		if c, ok := m.lib.Get(h.ID); ok {
			ans.Results = append(ans.Results, Result{Case: c, Score: 1})
		}
	}
	return ans, nil
}

// queryTerms picks the index terms of a text worth searching for: from
// unique words, without stop words and alert boilerplate, at most
// maxQueryWords words. surface maps each term back to a word as the user
// wrote it, for explanations.
func queryTerms(text string) (order []string, surface map[string]string) {
	surface = map[string]string{}
	seen := map[string]bool{}
	words := 0
	for _, w := range splitWords(normalize(text)) {
		if words == maxQueryWords {
			break
		}
		if w.script == latin && (stopwords[w.text] || boilerplate[w.text] || len(w.text) > 40 || looksLikeID(w.text)) {
			continue
		}
		if seen[w.text] {
			continue
		}
		seen[w.text] = true
		words++
		terms(w.text, func(term string, _, _ int) {
			if _, ok := surface[term]; !ok {
				surface[term] = w.text
				order = append(order, term)
			}
		})
	}
	return order, surface
}

// boilerplate are words every alert carries that say nothing about the
// problem.
var boilerplate = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`alert alerts alertname firing fired triggered trigger severity critical warning warn info
		p1 p2 p3 p4 p5 sev1 sev2 sev3 sev4 namespace instance job label labels annotation annotations description summary
		details detail runbook runbooks url http https www com io net org dashboard dashboards source value values metric
		monitor monitors env environment prod production staging stg dev cluster region zone team service owner oncall
		incident incidents pagerduty opsgenie datadog grafana prometheus alertmanager cloudwatch notification status
		view link silence ack acknowledged assigned escalation policy urgency high low
		html svc api`) {
		m[w] = true
	}
	return m
}()

// looksLikeID reports words that are identifiers rather than words: hashes,
// pod suffixes, long numbers.
func looksLikeID(w string) bool {
	digits, letters := 0, 0
	for _, r := range w {
		if r >= '0' && r <= '9' {
			digits++
		} else {
			letters++
		}
	}
	if digits >= 5 && letters == 0 {
		return true
	}
	return digits >= 2 && letters >= 2 && len(w) >= 6
}

// Query terms that more than commonShare of a large library's cases
// contain say little and cost much (long posting lists): they are left out,
// and at most maxQueryTerms of the rarest terms are searched.
const (
	commonShare   = 0.15
	commonMinLib  = 100
	maxQueryTerms = 32
	// otherLangTerms bounds the terms searched in the other language's
	// fields, which count half.
	otherLangTerms = 12
)

func (m *Matcher) textQuery(text string, lang cases.Lang) (query.Query, map[string]string, []string) {
	order, surface := queryTerms(text)
	n := m.lib.Len()
	var kept []string
	for _, t := range order {
		if n >= commonMinLib && float64(m.df[t]) > commonShare*float64(n) {
			continue
		}
		kept = append(kept, t)
	}
	if len(kept) > maxQueryTerms {
		slices.SortStableFunc(kept, func(a, b string) int { return cmp.Compare(m.df[a], m.df[b]) })
		kept = kept[:maxQueryTerms]
	}
	if len(kept) == 0 {
		return nil, surface, nil
	}
	// The other language's fields get the rarest few terms only: they count
	// half, and every term searched in every field costs a posting list.
	other := slices.Clone(kept)
	slices.SortStableFunc(other, func(a, b string) int { return cmp.Compare(m.df[a], m.df[b]) })
	other = other[:min(len(other), otherLangTerms)]
	var qs []query.Query
	for _, f := range textFields {
		for _, l := range []cases.Lang{cases.English, cases.Korean} {
			boost, ts := f.boost, kept
			if l != lang {
				if f.name == "summary" {
					continue // long, and half weight: not worth its cost
				}
				boost, ts = boost*0.5, other
			}
			field := fieldName(f.name, l)
			tqs := make([]query.Query, len(ts))
			for i, t := range ts {
				tq := bleve.NewTermQuery(t)
				tq.SetField(field)
				tq.SetBoost(boost)
				tqs[i] = tq
			}
			d := bleve.NewDisjunctionQuery(tqs...)
			d.SetMin(1)
			d.SetBoost(boost)
			qs = append(qs, d)
		}
	}
	return bleve.NewDisjunctionQuery(qs...), surface, kept
}

// candidate is a case being ranked.
type candidate struct {
	c     *cases.Case
	text  float64 // bleve score, 0 when the text search did not find it
	terms []string
	score float64
	tag   float64
}

// Tuning holds the ranking's constants. The defaults were chosen on the
// evaluation set (go run ./matcher/cmd/eval -sweep); they are exported so the
// evaluation can compare settings.
type Tuning struct {
	TextHalf       float64 // the bleve score that counts as half-way relevant
	TagWeight      float64 // share of the score from shared tags
	VoteTop        int     // nearest cases whose tags are voted
	VoteMin        float64 // share of the vote a tag needs to be added
	VoteWeight     float64 // weight of a voted tag beside a phrase match
	TextOnlyFloor  float64 // saturated text relevance needed when no tag was found
	ComponentFloor float64 // saturated text relevance needed when only components were found
	CauseBonus     float64 // added to a case whose root cause the text names
}

// DefaultTuning is the tuning the matcher uses unless told otherwise.
var DefaultTuning = Tuning{
	TextHalf:       0.2,
	TagWeight:      0.7,
	VoteTop:        5,
	VoteMin:        1.1,
	VoteWeight:     0.5,
	TextOnlyFloor:  0.8,
	ComponentFloor: 0.1,
	CauseBonus:     0.05,
}

// retrieveSize is how many text hits are ranked.
const retrieveSize = 40

func (m *Matcher) rank(ctx context.Context, ans *Answer, text string, f Filters, top int, floor bool) (*Answer, error) {
	tu := m.opts.Tuning
	var signals []Signal
	if m.opts.Mode != TextOnly {
		signals = m.ext.Extract(text)
	}
	tq, surface, qterms := m.textQuery(text, ans.Lang)
	fq := filterQuery(f)

	var hits search.DocumentMatchCollection
	if tq != nil {
		q := tq
		if fq != nil {
			q = bleve.NewConjunctionQuery(fq, tq)
		}
		req := bleve.NewSearchRequestOptions(q, retrieveSize, 0, false)
		res, err := m.search(ctx, req)
		if err != nil {
			return nil, err
		}
		hits = res.Hits
	}

	byID := map[string]*candidate{}
	var cands []*candidate
	add := func(c *cases.Case) *candidate {
		if cd, ok := byID[c.ID]; ok {
			return cd
		}
		cd := &candidate{c: c}
		byID[c.ID] = cd
		cands = append(cands, cd)
		return cd
	}
	for _, h := range hits {
		c, ok := m.lib.Get(h.ID)
		if !ok {
			continue
		}
		cd := add(c)
		cd.text = h.Score
	}

	// Query tags: phrase matches, then tags the most similar cases agree on.
	weights := map[string]float64{}
	causes := map[string]bool{} // root causes the text names ("after the deploy")
	for _, s := range signals {
		switch s.Kind {
		case cases.KindRootCause:
			causes[s.ID] = true
		case cases.KindSymptom:
			weights["symptom:"+s.ID] = s.Weight
			ans.Symptoms = append(ans.Symptoms, s)
		case cases.KindComponent:
			weights["component:"+s.ID] = s.Weight
			ans.Components = append(ans.Components, s)
		}
	}
	if m.opts.Mode != TextOnly {
		m.vote(ans, hits, weights)
	}

	var tagTotal float64
	for k, w := range weights {
		tagTotal += w * m.idfOf(k)
		if f.Empty() {
			for _, c := range m.byTag[k] {
				add(c)
			}
		}
	}
	var best float64
	for _, h := range hits {
		best = max(best, h.Score)
	}
	for _, cd := range cands {
		if !f.Empty() && !passes(cd.c, f) {
			cd.score = -1
			continue
		}
		// Relative to the best hit, scaled by how good the best hit is: the
		// case the text singles out scores high, the rest fall away fast.
		textNorm := cd.text / (best + tu.TextHalf)
		if tagTotal == 0 {
			cd.score = textNorm
			continue
		}
		var shared float64
		n := 0
		for _, k := range m.keys[cd.c] {
			if w, ok := weights[k]; ok {
				shared += w * m.idfOf(k)
				n++
			}
		}
		cd.tag = shared / tagTotal
		if nt := len(cd.c.Symptoms) + len(cd.c.Components); nt > 0 {
			// Prefer the case whose own tags the text covers best.
			cd.tag *= 0.8 + 0.2*float64(n)/float64(nt)
		}
		cd.score = tu.TagWeight*cd.tag + (1-tu.TagWeight)*textNorm
		if causes[cd.c.RootCause] {
			// A cause the text names ("since the deploy") breaks ties
			// between cases that look alike.
			cd.score = min(1, cd.score+tu.CauseBonus)
		}
	}
	slices.SortFunc(cands, func(a, b *candidate) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := cmp.Compare(b.c.Date, a.c.Date); c != 0 {
			return c
		}
		return cmp.Compare(a.c.ID, b.c.ID)
	})

	// The text must signal a problem: a symptom in its own words, or a
	// component together with text that clearly resembles a case, or text
	// that all but repeats one.
	symptom := slices.ContainsFunc(ans.Symptoms, func(s Signal) bool { return s.Phrase != votedPhrase })
	component := slices.ContainsFunc(ans.Components, func(s Signal) bool { return s.Phrase != votedPhrase })
	for _, cd := range cands {
		if len(ans.Results) == top || cd.score < 0 {
			break
		}
		if floor && m.opts.Mode == TextOnly {
			// The baseline is a plain text query: it has no notion of
			// confidence, so it answers whenever bleve finds anything.
			if cd.text <= 0 {
				break
			}
		} else if floor {
			if cd.score < m.opts.Floor {
				break
			}
			textAbs := cd.text / (cd.text + tu.TextHalf)
			switch {
			case symptom:
			case component && textAbs >= tu.ComponentFloor:
			case textAbs >= tu.TextOnlyFloor && len(cd.terms) >= 3:
			default:
				continue
			}
		}
		if cd.text > 0 {
			cd.terms = matchedTerms(cd.c, qterms, surface)
		}
		ans.Results = append(ans.Results, m.explain(cd, weights, ans.Lang))
	}
	return ans, nil
}

func (m *Matcher) idfOf(key string) float64 {
	if v, ok := m.idf[key]; ok {
		return v
	}
	return math.Log(1 + float64(max(m.lib.Len(), 1)))
}

// vote adds the symptoms and components that most of the text's nearest
// cases share, so that text which names a problem without the taxonomy's
// words still finds cases by tag.
func (m *Matcher) vote(ans *Answer, hits search.DocumentMatchCollection, weights map[string]float64) {
	tu := m.opts.Tuning
	if len(hits) == 0 {
		return
	}
	votes := map[string]float64{}
	var total float64
	for i, h := range hits {
		if i == tu.VoteTop {
			break
		}
		c, ok := m.lib.Get(h.ID)
		if !ok {
			continue
		}
		w := h.Score / (h.Score + tu.TextHalf)
		total += w
		for _, k := range m.keys[c] {
			votes[k] += w
		}
	}
	if total == 0 || hits[0].Score/(hits[0].Score+tu.TextHalf) < 0.5 {
		return
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range votes {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		share := votes[k] / total
		if share < tu.VoteMin {
			continue
		}
		if _, ok := weights[k]; ok {
			continue
		}
		weights[k] = tu.VoteWeight * share
		kind, id, _ := strings.Cut(k, ":")
		s := Signal{ID: id, Phrase: votedPhrase, Weight: weights[k]}
		if kind == "symptom" {
			s.Kind = cases.KindSymptom
			ans.Symptoms = append(ans.Symptoms, s)
		} else {
			s.Kind = cases.KindComponent
			ans.Components = append(ans.Components, s)
		}
	}
}

func passes(c *cases.Case, f Filters) bool {
	has := func(list []string, want []string) bool {
		for _, w := range want {
			if !slices.Contains(list, w) {
				return false
			}
		}
		return true
	}
	if !has(c.Symptoms, f.Symptoms) || !has(c.Components, f.Components) || !has(c.Contributing, f.Contributing) {
		return false
	}
	for _, rc := range f.RootCauses {
		if c.RootCause != rc {
			return false
		}
	}
	if len(f.Orgs) > 0 && !slices.Contains(f.Orgs, strings.ToLower(c.Org)) && !slices.Contains(f.Orgs, strings.ToLower(c.OrgSlug)) {
		return false
	}
	return f.Since == "" || c.Date >= f.Since
}

// matchedTerms lists the query words a case's searched text contains, as
// the user wrote them. Only shown results are explained, so analysing their
// text here costs less than asking bleve for every hit's term locations.
func matchedTerms(c *cases.Case, qterms []string, surface map[string]string) []string {
	want := make(map[string]bool, len(qterms))
	for _, t := range qterms {
		want[t] = true
	}
	seen := map[string]bool{}
	var out []string
	for _, f := range textFields {
		t := f.get(c)
		for _, text := range []string{t.En, t.Ko} {
			terms(text, func(term string, _, _ int) {
				if !want[term] {
					return
				}
				w := surface[term]
				if w == "" {
					w = term
				}
				if meaningful(w) && !seen[w] {
					seen[w] = true
					out = append(out, w)
				}
			})
		}
	}
	slices.Sort(out)
	return out
}

// meaningful reports whether a matched word is worth showing: not a number,
// not a fragment.
func meaningful(w string) bool {
	if utf8.RuneCountInString(w) < 2 {
		return false
	}
	letters := 0
	for _, r := range w {
		if unicode.IsLetter(r) {
			letters++
		}
	}
	return letters >= 2 && (letters*2 >= utf8.RuneCountInString(w) || len(w) > 3)
}

func (m *Matcher) explain(cd *candidate, weights map[string]float64, lang cases.Lang) Result {
	r := Result{Case: cd.c, Score: math.Round(min(max(cd.score, 0), 1)*1000) / 1000, Terms: cd.terms, TagScore: cd.tag, TextScore: cd.text}
	if len(r.Terms) > 8 {
		r.Terms = r.Terms[:8]
	}
	for _, s := range cd.c.Symptoms {
		if _, ok := weights["symptom:"+s]; ok {
			r.Symptoms = append(r.Symptoms, Tag{ID: s, Label: m.tax.Label(cases.KindSymptom, s, lang)})
		}
	}
	for _, s := range cd.c.Components {
		if _, ok := weights["component:"+s]; ok {
			r.Components = append(r.Components, Tag{ID: s, Label: m.tax.Label(cases.KindComponent, s, lang)})
		}
	}
	return r
}

// Case returns the library's case with the given id.
func (m *Matcher) Case(id string) (*cases.Case, bool) { return m.lib.Get(id) }
