package matcher

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/incidentbot/incidentbot/cases"
)

// The learned tag model: one Bernoulli naive Bayes classifier per symptom,
// component and root cause, over the words of a text (Porter stems,
// identifier parts, Hangul bigrams: the index's own terms). It is trained at
// index time on the loaded library's labelled text in both languages (each
// case's title, symptoms, trigger, detection and summary, labelled with the
// case's tags) and on the taxonomy's phrases and definitions, so a team's
// own cases teach it the team's words. Each tag's decision threshold is the
// one that maximised F1 in k-fold cross-validation over the library's cases.

// learnFolds is the k of the cross-validation that picks each tag's
// threshold.
const learnFolds = 5

// nbAlpha smooths the counts.
const nbAlpha = 1

// minPrecision is the cross-validated precision a tag's threshold must
// reach; minEvidence the least score it may be (a few words' worth).
//
// minSupport is how many documents with a tag must contain a word before
// the word counts as evidence for the tag.
//
// minRatio is the log of how much likelier a word must be with a tag than
// without it to count at all: a frequent tag's documents share most common
// words a little more often than chance, and many such words must not add
// up to a tag.
const (
	minRatio     = 1
	minSupport   = 3
	minPrecision = 0.5
	minEvidence  = 2
)

// calibScale is how many log-odds above its threshold a tag's score must be
// for the model to be about 73% sure (one logistic unit).
const calibScale = 3.0

// tagRef names a tag of the model.
type tagRef struct {
	Kind cases.Kind
	ID   string
}

// model is a trained tag model. It is read-only after training.
type model struct {
	Tags  []tagRef
	Vocab map[string]int32
	// W[f*T+t] is what feature f adds to tag t's log-odds when present.
	W []float32
	// B[t] is tag t's log-odds for a text with no known feature.
	B []float32
	// Theta[t] is tag t's threshold; +Inf when cross-validation never
	// found it reliably.
	Theta []float32
}

// trainDoc is one labelled text: its features (vocabulary ids, unique) and
// the indexes of its tags.
type trainDoc struct {
	feats  []int32
	labels []int32
	fold   int8 // -1: taxonomy text, always trained on
	eval   bool // held out to choose thresholds: a case's whole title or symptoms text
	train  bool // trained on: a sentence, a phrase or a definition
	lang   cases.Lang
	text   string // kept for evaluation documents only
}

// docFeatures returns the unique features of a text.
func docFeatures(text string, emit func(string)) {
	seen := map[string]bool{}
	terms(text, func(term string, _, _ int) {
		if !seen[term] {
			seen[term] = true
			emit(term)
		}
	})
}

// learnData gathers the training documents of a library.
type learnData struct {
	tags   []tagRef
	tagIdx map[tagRef]int32
	vocab  map[string]int32
	df     []int32
	docs   []trainDoc
	// keepText keeps the text of the sentences that make up evaluation
	// documents, for the report; training alone does not need it.
	keepText bool
}

func (d *learnData) tag(kind cases.Kind, id string) int32 {
	r := tagRef{kind, id}
	if i, ok := d.tagIdx[r]; ok {
		return i
	}
	i := int32(len(d.tags))
	d.tags = append(d.tags, r)
	d.tagIdx[r] = i
	return i
}

func (d *learnData) add(text string, labels []int32, fold int8, eval bool, lang cases.Lang) {
	if strings.TrimSpace(text) == "" || len(labels) == 0 {
		return
	}
	doc := trainDoc{labels: labels, fold: fold, eval: eval, train: !eval, lang: lang}
	if fold >= 0 && d.keepText {
		doc.text = text // the report runs the phrases on whole fields
	}
	docFeatures(text, func(f string) {
		id, ok := d.vocab[f]
		if !ok {
			id = int32(len(d.df))
			d.vocab[f] = id
			d.df = append(d.df, 0)
		}
		if !eval {
			d.df[id]++
		}
		doc.feats = append(doc.feats, id)
	})
	if len(doc.feats) > 0 {
		d.docs = append(d.docs, doc)
	}
}

// addUnion adds an evaluation document made of the features of docs.
func (d *learnData) addUnion(docs []trainDoc, labels []int32, fold int8, lang cases.Lang) {
	seen := map[int32]bool{}
	doc := trainDoc{labels: labels, fold: fold, eval: true, lang: lang}
	var text strings.Builder
	for _, x := range docs {
		for _, f := range x.feats {
			if !seen[f] {
				seen[f] = true
				doc.feats = append(doc.feats, f)
			}
		}
		text.WriteString(x.text)
		text.WriteByte(' ')
	}
	doc.text = text.String()
	d.docs = append(d.docs, doc)
}

// caseFold spreads cases over folds by id, the same way every time.
func caseFold(id string, k int) int8 {
	var h uint32 = 2166136261
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return int8(h % uint32(k))
}

// gather turns the library and the taxonomy into training documents.
func gather(lib *cases.Library, tax *cases.Taxonomy) *learnData {
	d := &learnData{tagIdx: map[tagRef]int32{}, vocab: map[string]int32{}}
	for _, kind := range []cases.Kind{cases.KindSymptom, cases.KindComponent, cases.KindRootCause} {
		for _, t := range tax.Tags(kind) {
			d.tag(kind, t.ID)
		}
	}
	for _, kind := range []cases.Kind{cases.KindSymptom, cases.KindComponent, cases.KindRootCause} {
		for _, t := range tax.Tags(kind) {
			l := []int32{d.tag(kind, t.ID)}
			for _, p := range t.Phrases.En {
				d.add(p, l, -1, false, cases.English)
			}
			for _, p := range t.Phrases.Ko {
				d.add(p, l, -1, false, cases.Korean)
			}
			d.add(t.Label.En+" "+t.Definition.En, l, -1, false, cases.English)
			d.add(t.Label.Ko+" "+t.Definition.Ko, l, -1, false, cases.Korean)
		}
	}
	for _, c := range lib.Cases() {
		var labels []int32
		for _, s := range c.Symptoms {
			labels = append(labels, d.tag(cases.KindSymptom, s))
		}
		for _, s := range c.Components {
			labels = append(labels, d.tag(cases.KindComponent, s))
		}
		if c.RootCause != "" {
			labels = append(labels, d.tag(cases.KindRootCause, c.RootCause))
		}
		fold := caseFold(c.ID, learnFolds)
		// Trained on sentences, not whole fields: alerts and chat are a
		// sentence or two.
		for _, f := range []struct {
			t    cases.Text
			eval bool
		}{{c.Title, true}, {c.SymptomsText, true}, {c.Trigger, false}, {c.Detection, false}, {c.Summary, false}} {
			for _, l := range []struct {
				text string
				lang cases.Lang
			}{{f.t.En, cases.English}, {f.t.Ko, cases.Korean}} {
				first := len(d.docs)
				d.keepText = f.eval
				for _, s := range sentences(l.text) {
					d.add(s, labels, fold, false, l.lang)
				}
				if f.eval && len(d.docs) > first {
					// Thresholds are chosen on whole fields, which the
					// case's tags describe as a whole (a sentence may
					// not): the union of the field's sentences.
					d.addUnion(d.docs[first:], labels, fold, l.lang)
				}
			}
		}
	}
	return d
}

// sentences splits a text into sentences (at ". ", "; ", "다. " and line
// ends), joining very short ones to the next.
func sentences(text string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	rs := []rune(text)
	for i, r := range rs {
		cur.WriteRune(r)
		end := r == '\n' || (r == '.' || r == ';' || r == '!' || r == '?' || r == '。') && (i+1 == len(rs) || rs[i+1] == ' ' || rs[i+1] == '\n')
		if end && len(strings.Fields(cur.String())) >= 4 {
			flush()
		}
	}
	flush()
	return out
}

// counts are the sufficient statistics of the model: how many documents
// carry each tag, and how many of them contain each feature.
type counts struct {
	n   int32   // documents
	nt  []int32 // per tag
	df  []int32 // per feature
	pos []int32 // [f*T+t]
}

func newCounts(v, t int) *counts {
	return &counts{nt: make([]int32, t), df: make([]int32, v), pos: make([]int32, v*t)}
}

func (c *counts) add(doc *trainDoc, t int, sign int32) {
	if !doc.train {
		return
	}
	c.n += sign
	for _, l := range doc.labels {
		c.nt[l] += sign
	}
	for _, f := range doc.feats {
		c.df[f] += sign
		row := c.pos[int(f)*t:]
		for _, l := range doc.labels {
			row[l] += sign
		}
	}
}

// row computes what feature f adds to each tag's score: the log of how
// much likelier the feature is in a document with the tag than without,
// when positive (evidence for the tag); 0 otherwise. Only evidence for a
// tag is counted, so a text with no known word gets no tag.
func (c *counts) row(f int, out []float32) {
	t := len(c.nt)
	n := float64(c.n)
	df := float64(c.df[f])
	for i, p := range c.pos[f*t : f*t+t] {
		nt := float64(c.nt[i])
		pp := (float64(p) + nbAlpha) / (nt + 2*nbAlpha)
		q := (df - float64(p) + nbAlpha) / (n - nt + 2*nbAlpha)
		if p < minSupport {
			// Too few examples to tell a pattern from chance.
			out[i] = 0
			continue
		}
		out[i] = float32(max(0, math.Log(pp/q)-minRatio))
	}
}

// weights turns counts into the model's W and B.
func (c *counts) weights(w, b []float32) {
	t := len(c.nt)
	for f := range c.df {
		c.row(f, w[f*t:f*t+t])
	}
	for i := range b {
		b[i] = 0
	}
}

// sentenceFeatures is about how many features a sentence has. A longer
// text's evidence is scaled down to a sentence's, so that the thresholds
// chosen on sentences hold for a long report too.
const sentenceFeatures = 16

// score adds up the log-odds of every tag for a document's features.
func score(w, b []float32, feats []int32, out []float32) {
	t := len(b)
	for i := range out {
		out[i] = 0
	}
	for _, f := range feats {
		row := w[int(f)*t : int(f)*t+t]
		for i, x := range row {
			out[i] += x
		}
	}
	scale := float32(1)
	if len(feats) > sentenceFeatures {
		scale = float32(math.Sqrt(sentenceFeatures / float64(len(feats))))
	}
	for i := range out {
		out[i] = b[i] + scale*out[i]
	}
}

// cvScores scores every evaluation document with a model trained without
// its fold. It returns the documents and their scores ([doc*T+t]).
func (d *learnData) cvScores(total *counts) (docs []*trainDoc, scores []float32) {
	t := len(d.tags)
	v := len(d.df)
	w := make([]float32, v*t)
	b := make([]float32, t)
	fold := newCounts(v, t)
	for k := 0; k < learnFolds; k++ {
		copy(fold.pos, total.pos)
		copy(fold.df, total.df)
		copy(fold.nt, total.nt)
		fold.n = total.n
		var held []*trainDoc
		for i := range d.docs {
			doc := &d.docs[i]
			if int(doc.fold) == k {
				fold.add(doc, t, -1)
				if doc.eval {
					held = append(held, doc)
				}
			}
		}
		if len(held) == 0 {
			continue
		}
		// Only the rows the held-out documents need.
		done := make([]bool, v)
		for _, doc := range held {
			for _, f := range doc.feats {
				if !done[f] {
					done[f] = true
					fold.row(int(f), w[int(f)*t:int(f)*t+t])
				}
			}
		}
		s := make([]float32, t)
		for _, doc := range held {
			score(w, b, doc.feats, s)
			docs = append(docs, doc)
			scores = append(scores, s...)
		}
	}
	return docs, scores
}

// thresholds picks, for each tag, the score above which cross-validation
// found the best F1. A tag with no held-out example, or whose best F1 is
// poor, gets +Inf: the model does not claim it.
func thresholds(docs []*trainDoc, scores []float32, t int) []float32 {
	theta := make([]float32, t)
	type sd struct {
		s   float32
		pos bool
	}
	col := make([]sd, len(docs))
	for i := 0; i < t; i++ {
		npos := 0
		for j, doc := range docs {
			p := slices.Contains(doc.labels, int32(i))
			col[j] = sd{scores[j*t+i], p}
			if p {
				npos++
			}
		}
		theta[i] = float32(math.Inf(1))
		if npos < 2 {
			continue
		}
		slices.SortFunc(col, func(a, b sd) int { return cmp.Compare(b.s, a.s) })
		best, tp := 0.0, 0
		for j, x := range col {
			if x.pos {
				tp++
			}
			if j+1 < len(col) && col[j+1].s == x.s {
				continue
			}
			// The model is one voice among several: it claims a tag only
			// where it was right at least minPrecision of the time.
			if float64(tp) < minPrecision*float64(j+1) || x.s < minEvidence {
				continue
			}
			f1 := 2 * float64(tp) / float64(j+1+npos)
			if f1 > best {
				best = f1
				next := x.s - 1
				if j+1 < len(col) {
					next = col[j+1].s
				}
				theta[i] = max(minEvidence, (x.s+next)/2)
			}
		}
		if best < 0.1 {
			theta[i] = float32(math.Inf(1))
		}
	}
	return theta
}

// learn trains the tag model on a library and a taxonomy.
func learn(lib *cases.Library, tax *cases.Taxonomy) *model {
	d := gather(lib, tax)
	d.prune()
	t := len(d.tags)
	total := newCounts(len(d.df), t)
	for i := range d.docs {
		total.add(&d.docs[i], t, 1)
	}
	docs, scores := d.cvScores(total)
	m := &model{Tags: d.tags, Vocab: d.vocab, W: make([]float32, len(d.df)*t), B: make([]float32, t)}
	m.Theta = thresholds(docs, scores, t)
	total.weights(m.W, m.B)
	return m
}

// prune drops features seen in a single document: they cannot generalise
// and they make the model large.
func (d *learnData) prune() {
	remap := make([]int32, len(d.df))
	var df []int32
	for i, n := range d.df {
		if n < 2 {
			remap[i] = -1
			continue
		}
		remap[i] = int32(len(df))
		df = append(df, n)
	}
	for f, id := range d.vocab {
		if remap[id] < 0 {
			delete(d.vocab, f)
		} else {
			d.vocab[f] = remap[id]
		}
	}
	d.df = df
	for i := range d.docs {
		doc := &d.docs[i]
		kept := doc.feats[:0]
		for _, f := range doc.feats {
			if remap[f] >= 0 {
				kept = append(kept, remap[f])
			}
		}
		doc.feats = kept
	}
}

// learnedTag is one tag the model finds in a text.
type learnedTag struct {
	tag      tagRef
	prob     float64 // calibrated: 0.5 at the tag's threshold
	evidence []string
}

// infer scores a text. It returns every tag whose calibrated probability is
// at least minProb, best first, with the words that weighed most for it.
func (m *model) infer(text string, minProb float64) []learnedTag {
	if m == nil || len(m.B) == 0 {
		return nil
	}
	t := len(m.B)
	var feats []int32
	surface := map[int32]string{}
	for _, w := range splitWords(normalize(text)) {
		emitWord(w, func(term string) {
			if id, ok := m.Vocab[term]; ok {
				if _, dup := surface[id]; !dup {
					surface[id] = w.text
					feats = append(feats, id)
				}
			}
		})
	}
	s := make([]float32, t)
	score(m.W, m.B, feats, s)
	var out []learnedTag
	for i, x := range s {
		if math.IsInf(float64(m.Theta[i]), 1) {
			continue
		}
		p := 1 / (1 + math.Exp(-float64(x-m.Theta[i])/calibScale))
		if p < minProb {
			continue
		}
		lt := learnedTag{tag: m.Tags[i], prob: p}
		type fw struct {
			w string
			x float32
		}
		var ev []fw
		for _, f := range feats {
			if x := m.W[int(f)*t+i]; x > 1 {
				ev = append(ev, fw{surface[f], x})
			}
		}
		slices.SortFunc(ev, func(a, b fw) int { return cmp.Compare(b.x, a.x) })
		seen := map[string]bool{}
		for _, e := range ev {
			if !seen[e.w] && len(lt.evidence) < 4 {
				seen[e.w] = true
				lt.evidence = append(lt.evidence, e.w)
			}
		}
		out = append(out, lt)
	}
	slices.SortFunc(out, func(a, b learnedTag) int { return cmp.Compare(b.prob, a.prob) })
	return out
}

// emitWord emits the index terms of one word (see terms).
func emitWord(w word, emit func(string)) {
	switch w.script {
	case latin:
		if stopwords[w.text] || len(w.text) > 64 {
			return
		}
		emit(w.stem)
		for _, p := range w.parts {
			if !stopwords[p] {
				emit(stem(p))
			}
		}
	default:
		emitBigrams(w, func(s string, _, _ int) { emit(s) })
	}
}
