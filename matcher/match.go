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
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/incidentbot/incidentbot/cases"
)

// DefaultFloor is the score below which a case is not suggested, once the
// text has passed the answer gate (see Weights.Floor).
var DefaultFloor = DefaultWeights.Floor

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
	// Weights override DefaultWeights when set.
	Weights *Weights
	// Logger receives what goes wrong with the index on disk and is worked
	// around (a lock held elsewhere, a damaged index rebuilt); nil discards.
	Logger *slog.Logger
	// Only keeps cases to one channel each: case id -> the channel where
	// it may be suggested and shown (a team case captured in a private
	// channel). Only lookups for that channel (MatchWith, SearchWith,
	// CaseIn) see such a case; Match, Rank, Search, Case and Library never
	// do, and the learned tag model is trained without them.
	Only map[string]string
}

// Matcher answers which cases of a library are most like a text. It is safe
// for concurrent use.
type Matcher struct {
	lib   *cases.Library // every case, those kept to a channel too
	pub   *cases.Library // the cases every lookup may see
	tax   *cases.Taxonomy
	idx   bleve.Index
	ext   *Extractor
	opts  Options
	reuse bool

	model *model // learned tag inference

	byTag map[string][]*cases.Case // "symptom:x" -> cases
	keys  map[*cases.Case][]string // a case's tag keys
	idf   map[string]float64

	// The same by number, for ranking thousands of candidates per lookup
	// without hashing strings: cases numbered as lib.Cases() lists them,
	// tag keys and root causes as first met.
	all       []*cases.Case
	num       map[string]int32 // case id -> number
	tagNum    map[string]int32 // tag key -> number
	tagIDF    []float64        // tag number -> idf
	tagCases  [][]int32        // tag number -> cases carrying it (as byTag)
	caseTags  [][]int32        // case number -> its tag numbers (as keys)
	causeNum  map[string]int32 // root cause id ("" too) -> number
	caseCause []int32          // case number -> its root cause number
	public    []bool           // case number -> built in, beside the team's own cases
	df        map[string]int   // index term -> cases whose text has it (most over fields)

	closeOnce sync.Once
	closeErr  error
}

// concurrentBuild is the largest library whose tag model and index New
// builds at the same time. The built-in library (794 cases) and a team's
// few hundred are well under it; at 10,000 cases training and indexing
// each have a large working set (see BenchmarkBuild10k's peak memory),
// which overlapping them would add up.
const concurrentBuild = 2000

// learnModel is loadOrLearn; tests replace it.
var learnModel = loadOrLearn

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
	if opts.Weights == nil {
		w := DefaultWeights
		opts.Weights = &w
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	pub := lib
	if len(opts.Only) > 0 {
		pub = lib.Filter(func(c *cases.Case) bool { _, kept := opts.Only[c.ID]; return !kept })
	}
	// The model learns only from the cases every lookup may see. For a
	// large library it is trained before the index is built, so that
	// training's working set is freed before the index's is taken: both at
	// once are what the build would peak at. A small library's are small
	// together, and the two are independent (each only reads the library
	// and the taxonomy), so they are built at the same time.
	var (
		mdl    *model
		idx    bleve.Index
		df     map[string]int
		reused bool
		err    error
	)
	if lib.Len() <= concurrentBuild {
		var lerr error
		var crash any
		done := make(chan struct{})
		go func() {
			defer close(done)
			// A panic while training is the caller's, as it was when
			// training ran on its goroutine: a bot that recovers from a
			// failed rebuild must not lose the process to this one.
			defer func() { crash = recover() }()
			mdl, lerr = learnModel(pub, opts.Taxonomy, opts.IndexDir)
		}()
		idx, df, reused, err = buildIndex(lib, opts.IndexDir, opts.Scoring, opts.Logger)
		<-done
		if crash != nil || lerr != nil {
			if err == nil {
				idx.Close()
			}
			if crash != nil {
				panic(crash)
			}
			return nil, lerr
		}
	} else {
		if mdl, err = learnModel(pub, opts.Taxonomy, opts.IndexDir); err != nil {
			return nil, err
		}
		idx, df, reused, err = buildIndex(lib, opts.IndexDir, opts.Scoring, opts.Logger)
	}
	if err != nil {
		return nil, err
	}
	m := &Matcher{lib: lib, pub: pub, tax: opts.Taxonomy, idx: idx, ext: NewExtractor(opts.Taxonomy), opts: opts, reuse: reused, df: df, model: mdl,
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
	m.numbered()
	return m, nil
}

// numbered fills the numbered forms of byTag, keys and idf.
func (m *Matcher) numbered() {
	m.all = m.lib.Cases()
	m.num = make(map[string]int32, len(m.all))
	m.tagNum, m.causeNum = map[string]int32{}, map[string]int32{}
	m.caseTags, m.caseCause = make([][]int32, len(m.all)), make([]int32, len(m.all))
	m.public = make([]bool, len(m.all))
	var own bool
	for i, c := range m.all {
		m.public[i] = m.lib.Origin(c.ID) == cases.BuiltinSource
		own = own || !m.public[i]
		if g, ok := m.lib.Get(c.ID); ok && g == c {
			m.num[c.ID] = int32(i)
		}
		for _, k := range m.keys[c] {
			t, ok := m.tagNum[k]
			if !ok {
				t = int32(len(m.tagIDF))
				m.tagNum[k] = t
				m.tagIDF = append(m.tagIDF, m.idf[k])
				m.tagCases = append(m.tagCases, nil)
			}
			m.caseTags[i] = append(m.caseTags[i], t)
			m.tagCases[t] = append(m.tagCases[t], int32(i))
		}
		r, ok := m.causeNum[c.RootCause]
		if !ok {
			r = int32(len(m.causeNum))
			m.causeNum[c.RootCause] = r
		}
		m.caseCause[i] = r
	}
	if !own {
		clear(m.public) // all built in: none is ranked below another's own
	}
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

// Library returns the library the matcher answers from, without the cases
// Options.Only keeps to a channel.
func (m *Matcher) Library() *cases.Library { return m.pub }

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
	// Votes are the votes on the case for similar texts that moved it
	// (only VoteCap of each kind count); zero when there were none.
	Votes Boost
}

// Answer is what the matcher says about a text.
type Answer struct {
	Lang       cases.Lang
	Symptoms   []Signal // symptoms the text signals
	Components []Signal // components the text signals
	// RootCauses are the causes the text implies, surest first, with the
	// words that imply them.
	RootCauses []Inferred
	Results    []Result
}

// resolvedNotice matches alerts that announce the end of a problem.
var resolvedNotice = regexp.MustCompile(`(?i)^\W*(\[\s*(resolved|ok|recovered|해결|복구|정상)[^\]]*\]|(resolved|recovered|ok)\s*:|(해결|복구|정상화)(됨|완료)?\s*:)`)

// recovering matches a Korean notice that recovery is under way ("[복구
// 중]", "[복구 진행 중]", "[복구 완료 전 안내]"): the problem goes on, and
// the notice reports it as "Identified" or "Monitoring" does.
var recovering = regexp.MustCompile(`^\W*\[\s*(해결|복구|정상화)\s*(중|진행|작업|완료\s*전)`)

// resolved reports whether a text announces the end of a problem.
func resolved(text string) bool {
	return resolvedNotice.MatchString(text) && !recovering.MatchString(text)
}

// maxQueryWords bounds the words sent to bleve for one text.
const maxQueryWords = 80

// Match returns up to top cases most like text, best first, each above the
// confidence floor. Text that signals nothing (greetings, thanks, a resolved
// notice) gets no results.
func (m *Matcher) Match(ctx context.Context, text string, top int) (*Answer, error) {
	return m.MatchWith(ctx, text, top, MatchOptions{})
}

// MatchWith is Match with what the caller adds to the text: the votes
// cast on cases for similar texts, and the channel the lookup is for (the
// cases kept to o.Channel are among those it may suggest).
func (m *Matcher) MatchWith(ctx context.Context, text string, top int, o MatchOptions) (*Answer, error) {
	ans := &Answer{Lang: DetectLang(text)}
	if top <= 0 || strings.TrimSpace(text) == "" || resolved(text) {
		return ans, nil
	}
	return m.rank(ctx, ans, text, Filters{}, top, true, o)
}

// Rank returns the top cases most like text with no confidence floor: the
// ranking itself, for evaluation and for "show more" lookups that must
// answer something.
func (m *Matcher) Rank(ctx context.Context, text string, top int) (*Answer, error) {
	ans := &Answer{Lang: DetectLang(text)}
	if top <= 0 || strings.TrimSpace(text) == "" {
		return ans, nil
	}
	return m.rank(ctx, ans, text, Filters{}, top, false, MatchOptions{})
}

// Search answers a lookup: free text with optional filters (see ParseQuery).
// With filters and no text it lists the matching cases, newest first; the
// confidence floor applies only to text without filters.
func (m *Matcher) Search(ctx context.Context, q string, top int) (*Answer, error) {
	return m.SearchWith(ctx, q, top, MatchOptions{})
}

// SearchWith is Search for a lookup that says more than its query: the
// cases kept to o.Channel are among those it may find.
func (m *Matcher) SearchWith(ctx context.Context, q string, top int, o MatchOptions) (*Answer, error) {
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
		return m.list(ctx, ans, f, top, o)
	}
	return m.rank(ctx, ans, text, f, top, f.Empty(), o)
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

func (m *Matcher) list(ctx context.Context, ans *Answer, f Filters, top int, o MatchOptions) (*Answer, error) {
	// Hits the lookup may not see are dropped: ask for enough more.
	req := bleve.NewSearchRequestOptions(filterQuery(f), top+len(m.opts.Only), 0, false)
	req.SortBy([]string{"-" + fieldDate, "_id"})
	res, err := m.search(ctx, req)
	if err != nil {
		return nil, err
	}
	for _, h := range res.Hits {
		if len(ans.Results) == top {
			break
		}
		if c, ok := m.lib.Get(h.ID); ok && o.sees(m.opts.Only, c.ID) {
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

// Case returns the library's case with the given id.
func (m *Matcher) Case(id string) (*cases.Case, bool) { return m.pub.Get(id) }

// CaseIn returns the case with id if it may be shown in channel: every case
// Case returns, and those Options.Only keeps to channel.
func (m *Matcher) CaseIn(id, channel string) (*cases.Case, bool) {
	if !(MatchOptions{Channel: channel}).sees(m.opts.Only, id) {
		return nil, false
	}
	return m.lib.Get(id)
}
