package matcher

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/incidentbot/incidentbot/cases"
)

// The learned tag model: one Bernoulli naive Bayes classifier per symptom,
// component and root cause, over the words of a text (Porter stems,
// identifier parts, Hangul bigrams: the index's own terms). It is trained at
// index time on the loaded library's labelled text in both languages (each
// case's title, symptoms, trigger, detection and summary, labelled with the
// case's tags) and on the taxonomy's phrases and definitions, so a team's
// own cases teach it the team's words. It also learns from the built-in
// messages that report trouble, each labelled with the symptoms and
// components it describes (see gatherMessages): alerts, status updates and
// chat name a tag in words a write-up seldom uses. Each tag's decision
// threshold is the one that maximised F1 in k-fold cross-validation over
// the library's cases and the messages.
//
// A case's trigger and summary tell why it happened and what was done
// about it: their sentences teach its components and root cause, but not
// its symptoms. For symptoms they are left out (neither for nor against),
// so that the words of a cause ("kafka", "config change") do not become
// evidence of the trouble it brought.

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
// minCases is how many of the tag's cases must have it too: one case
// that says "zoom" in five sentences is one coincidence, not five.
//
// minRatio is the log of how much likelier a word must be with a tag than
// without it to count at all: a frequent tag's documents share most common
// words a little more often than chance, and many such words must not add
// up to a tag.
const (
	minRatio     = 1
	minSupport   = 3
	minCases     = 2
	minPrecision = 0.5
	minEvidence  = 2
)

// symptomPrecision is the cross-validated precision a symptom's threshold
// must reach: a symptom is what answers a message, and a word that only
// sometimes goes with trouble ("PR", "dashboard") must not answer chatter.
const symptomPrecision = 0.6

// rule is what a tag's threshold must meet (see thresholds).
type rule struct {
	floor     float32
	precision float64
	support   int
	// symptom is the precision a symptom's threshold must reach, when
	// higher than precision.
	symptom float64
}

var nbRule = rule{floor: minEvidence, precision: minPrecision, support: 2, symptom: symptomPrecision}

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
	// Calib is how many log-odds above its threshold a tag's score must
	// be for the model to be about 73% sure (calibScale when 0);
	// MinWeight the least weight a word needs to be shown as evidence
	// (1 when 0).
	Calib, MinWeight float32
	// Also is a second model whose tags are added to this one's (the
	// logistic model beside naive Bayes; see tagModel), or nil.
	Also *model
	// TroubleW[f] is what term f of TroubleVocab adds to the log-odds
	// that a text reports trouble (see trouble.go); empty in the second
	// model.
	TroubleVocab map[string]int32
	TroubleW     []float32
	TroubleB     float32
}

// trainDoc is one evaluation document: a case's whole title or symptoms
// text in one language, held out to choose thresholds. It has its features
// (vocabulary ids, unique) and the indexes of its tags.
type trainDoc struct {
	feats  []int32
	labels []int32
	fold   int8
	lang   cases.Lang
	text   string // for the report only (see gather)
	// kinds are the kinds of tag the document speaks for (see
	// setFor): a built-in message names no root cause, so it is no
	// example against one.
	kinds uint8
	// message: a built-in message rather than a case's field.
	message bool
}

// learnData gathers the training documents of a library.
//
// A 10,000-case library has hundreds of thousands of training sentences,
// and the build's peak memory is mostly theirs; so they are kept as runs of
// int32 in large blocks (see texts) rather than one object and two slices
// each.
type learnData struct {
	tags   []tagRef
	tagIdx map[tagRef]int32
	vocab  map[string]int32
	df     []int32 // per feature: the training texts that have it
	// docs are the evaluation documents.
	docs []trainDoc
	// train are the training texts (sentences, phrases and definitions)
	// by fold; train[learnFolds] the taxonomy's, never held out.
	train [learnFolds + 1]texts
	// units are the cases' whole fields (the union of a field's
	// sentences), by fold, labelled as the field's sentences are: what
	// the logistic model trains on (see logit.go).
	units [learnFolds]texts
	// cases are the features of each case, by fold (the taxonomy's texts
	// each one, in cases[learnFolds]): how many cases back a word (see
	// minCases).
	cases [learnFolds + 1]texts
	// trouble are the trouble model's training texts, labelled report
	// or talk, by fold; trouble[learnFolds] the taxonomy's (see
	// trouble.go).
	trouble [learnFolds + 1]texts
	tvocab  map[string]int32
	// sets are the label sets the training texts refer to; the first
	// taxSets are the taxonomy's, one tag each. kinds are, per set, the
	// kinds of tag its texts speak for (see setFor).
	sets    [][]int32
	kinds   []uint8
	taxSets int
	// keepText keeps the evaluation documents' text, for the report;
	// training alone does not need it.
	keepText bool

	// Scratch space of add: a text's features, and, per feature, the
	// last text that had it (mark) numbered by gen.
	feats []int32
	mark  []int32
	gen   int32
	// Scratch space of gather: an evaluation document's features, and
	// which features it has; a case's features, and which of them its
	// symptom fields have.
	union   []int32
	inUnion []bool
	// caseFeats are a case's features; caseSym[f] is 0 for a feature
	// the case does not have, 2 for one a field that teaches its symptoms
	// has, 1 for the others.
	caseFeats []int32
	caseSym   []uint8
	// Scratch space of the trouble model's gathering: a text's features,
	// and, per term, the last text that had it (tmark) numbered by tgen.
	tfeats []int32
	tmark  []int32
	tgen   int32
	// stems remembers the stems of the words gathering splits (nil once
	// it is done).
	stems stemMemo
}

// sentence is one sentence of a text (see sentences) and its words
// (splitWords of the normalised sentence), what both models train on.
type sentence struct {
	text  string
	words []word
}

// textSplits holds the sentences of one case's texts, by text, so that
// the tag model and the trouble model split each text into sentences and
// words once. A nil textSplits splits every time.
type textSplits map[string][]sentence

// sentences returns the sentences of text with their words, the words'
// stems remembered in stems.
func (ts textSplits) sentences(text string, stems stemMemo) []sentence {
	if out, ok := ts[text]; ok {
		return out
	}
	var out []sentence
	for _, s := range sentences(text) {
		out = append(out, sentence{s, stems.splitWords(normalize(s))})
	}
	if ts != nil {
		ts[text] = out
	}
	return out
}

// texts holds training texts compactly: each is a record of its label
// set's index, its number of features and its features, in blocks of
// textBlock int32 or more.
type texts struct{ blocks [][]int32 }

const textBlock = 1 << 16

func (s *texts) add(set int32, feats []int32) {
	need := 2 + len(feats)
	last := len(s.blocks) - 1
	if last < 0 || cap(s.blocks[last])-len(s.blocks[last]) < need {
		s.blocks = append(s.blocks, make([]int32, 0, max(textBlock, need)))
		last++
	}
	b := append(s.blocks[last], set, int32(len(feats)))
	s.blocks[last] = append(b, feats...)
}

// each calls f with every text's label set and features, in the order they
// were added.
func (s *texts) each(f func(set int32, feats []int32)) {
	for _, b := range s.blocks {
		for i := 0; i < len(b); {
			n := int(b[i+1])
			f(b[i], b[i+2:i+2+n])
			i += 2 + n
		}
	}
}

// remap replaces every feature f by remap[f], dropping those mapped below 0.
// A text left with no feature stays: it still counts as a document.
func (s *texts) remap(remap []int32) {
	for k, b := range s.blocks {
		w := 0
		for i := 0; i < len(b); {
			set, n := b[i], int(b[i+1])
			head := w
			w += 2
			for _, f := range b[i+2 : i+2+n] { // w never passes the feature read
				if r := remap[f]; r >= 0 {
					b[w] = r
					w++
				}
			}
			b[head], b[head+1] = set, int32(w-head-2)
			i += 2 + n
		}
		s.blocks[k] = b[:w]
	}
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

// set records a label set whose texts speak for every kind of tag, and
// returns its index.
func (d *learnData) set(labels []int32) int32 {
	return d.setFor(labels, allKinds)
}

// setFor records the labels of the kinds in kinds (bit kindBit(k) for kind
// k) as a label set whose texts speak for those kinds only: for the other
// kinds' tags they are neither positive nor negative.
func (d *learnData) setFor(labels []int32, kinds uint8) int32 {
	var ls []int32
	for _, l := range labels {
		if kinds&kindBit(d.tags[l].Kind) != 0 {
			ls = append(ls, l)
		}
	}
	d.sets = append(d.sets, ls)
	d.kinds = append(d.kinds, kinds)
	return int32(len(d.sets) - 1)
}

// numKinds is how many kinds of tag there are; allKinds the bits of them
// all.
const (
	numKinds = 3
	allKinds = 1<<numKinds - 1
)

// kindIndex numbers the kinds of tag: symptoms, components, root causes.
func kindIndex(k cases.Kind) int {
	switch k {
	case cases.KindSymptom:
		return 0
	case cases.KindComponent:
		return 1
	}
	return 2
}

func kindBit(k cases.Kind) uint8 { return 1 << kindIndex(k) }

// features returns the unique features of a text, in the order they first
// appear, adding new ones to the vocabulary. The slice is valid until the
// next call.
func (d *learnData) features(text string) []int32 {
	return d.wordFeatures(d.stems.splitWords(normalize(text)))
}

// wordFeatures is features of the words split from a text.
func (d *learnData) wordFeatures(words []word) []int32 {
	d.feats = d.feats[:0]
	d.gen++
	wordTerms(words, func(term string, _, _ int) {
		id, ok := d.vocab[term]
		if !ok {
			id = int32(len(d.df))
			// A term may share the memory of the text it came from;
			// the model keeps its vocabulary, not the library's text.
			d.vocab[strings.Clone(term)] = id
			d.df = append(d.df, 0)
			d.mark = append(d.mark, 0)
		}
		if d.mark[id] != d.gen {
			d.mark[id] = d.gen
			d.feats = append(d.feats, id)
		}
	})
	return d.feats
}

// add adds a training text labelled with the label set set, and returns
// its features (valid until the next call), none when it has no words.
func (d *learnData) add(text string, set int32, fold int8) []int32 {
	if strings.TrimSpace(text) == "" || len(d.sets[set]) == 0 {
		return nil
	}
	return d.addWords(d.stems.splitWords(normalize(text)), set, fold)
}

// addWords is add of the words split from a text.
func (d *learnData) addWords(words []word, set int32, fold int8) []int32 {
	if len(d.sets[set]) == 0 {
		return nil
	}
	feats := d.wordFeatures(words)
	if len(feats) == 0 {
		return nil
	}
	d.count(feats, set, fold)
	return feats
}

// count adds a training text's features, labelled with the label set set.
func (d *learnData) count(feats []int32, set int32, fold int8) {
	for _, f := range feats {
		d.df[f]++
	}
	k := fold
	if k < 0 {
		k = learnFolds
	}
	d.train[k].add(set, feats)
	if fold < 0 {
		d.cases[learnFolds].add(set, feats)
	}
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
// keepText keeps the evaluation documents' text, which only the report
// needs. With trouble it gathers the trouble model's training texts too
// (see gatherTrouble), splitting each text into sentences and words once
// for both models.
func gather(lib *cases.Library, tax *cases.Taxonomy, keepText, trouble bool) *learnData {
	d := &learnData{tagIdx: map[tagRef]int32{}, vocab: map[string]int32{}, keepText: keepText, stems: stemMemo{}}
	for _, kind := range []cases.Kind{cases.KindSymptom, cases.KindComponent, cases.KindRootCause} {
		for _, t := range tax.Tags(kind) {
			d.tag(kind, t.ID)
		}
	}
	for _, kind := range []cases.Kind{cases.KindSymptom, cases.KindComponent, cases.KindRootCause} {
		for _, t := range tax.Tags(kind) {
			l := d.set([]int32{d.tag(kind, t.ID)})
			for _, p := range t.Phrases.En {
				d.add(p, l, -1)
			}
			for _, p := range t.Phrases.Ko {
				d.add(p, l, -1)
			}
			d.add(t.Label.En+" "+t.Definition.En, l, -1)
			d.add(t.Label.Ko+" "+t.Definition.Ko, l, -1)
		}
	}
	d.taxSets = len(d.sets)
	var msgWords [][]word
	var split textSplits
	if trouble {
		msgWords = d.troubleStart(tax, true)
		split = textSplits{}
	}
	for _, c := range lib.Cases() {
		clear(split)
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
		all := d.set(labels)
		// Why it happened and what was done: not its symptoms.
		why := d.setFor(labels, kindBit(cases.KindComponent)|kindBit(cases.KindRootCause))
		fold := caseFold(c.ID, learnFolds)
		// Trained on sentences, not whole fields: alerts and chat are a
		// sentence or two.
		for _, f := range []struct {
			t    cases.Text
			eval bool
			set  int32
		}{{c.Title, true, all}, {c.SymptomsText, true, all}, {c.Trigger, false, why}, {c.Detection, false, all}, {c.Summary, false, why}} {
			set := f.set
			for _, l := range []struct {
				text string
				lang cases.Lang
			}{{f.t.En, cases.English}, {f.t.Ko, cases.Korean}} {
				// Thresholds are chosen on whole fields, which the
				// case's tags describe as a whole (a sentence may not):
				// the union of the field's sentences. The logistic
				// model trains on every field's union.
				union := d.union[:0]
				var text strings.Builder
				had := false
				if len(d.sets[set]) == 0 {
					// Nothing to learn from here (see add).
					continue
				}
				for _, s := range split.sentences(l.text, d.stems) {
					feats := d.addWords(s.words, set, fold)
					if len(feats) == 0 {
						continue
					}
					if n := len(d.df); len(d.inUnion) < n {
						d.inUnion = append(d.inUnion, make([]bool, n-len(d.inUnion))...)
						d.caseSym = append(d.caseSym, make([]uint8, n-len(d.caseSym))...)
					}
					for _, x := range feats {
						if d.caseSym[x] == 0 {
							d.caseSym[x] = 1
							d.caseFeats = append(d.caseFeats, x)
						}
						if set == all {
							d.caseSym[x] = 2
						}
					}
					had = true
					if d.keepText {
						text.WriteString(s.text)
						text.WriteByte(' ')
					}
					for _, f := range feats {
						if !d.inUnion[f] {
							d.inUnion[f] = true
							union = append(union, f)
						}
					}
				}
				for _, f := range union {
					d.inUnion[f] = false
				}
				d.union = union
				if had {
					d.units[fold].add(set, union)
				}
				if had && f.eval {
					d.docs = append(d.docs, trainDoc{feats: slices.Clone(union), labels: labels, fold: fold, lang: l.lang, text: text.String(), kinds: allKinds})
				}
			}
		}
		// The case backs each of its words once: for all its tags where
		// a field that teaches its symptoms has it, else for the others.
		var seen, told []int32
		for _, x := range d.caseFeats {
			if d.caseSym[x] == 2 {
				seen = append(seen, x)
			} else {
				told = append(told, x)
			}
			d.caseSym[x] = 0
		}
		d.caseFeats = d.caseFeats[:0]
		slices.Sort(seen)
		slices.Sort(told)
		if len(seen) > 0 {
			d.cases[fold].add(all, seen)
		}
		if len(told) > 0 && len(d.sets[why]) > 0 {
			d.cases[fold].add(why, told)
		}
		if trouble {
			d.troubleCase(c, fold, split)
		}
	}
	d.gatherMessages(msgWords)
	d.feats, d.mark, d.union, d.inUnion, d.caseFeats, d.caseSym = nil, nil, nil, nil, nil, nil
	d.tfeats, d.tmark, d.stems = nil, nil, nil
	return d
}

// messageTags is how many times each built-in message that reports
// trouble is counted as a training text and a case of its tags (a
// variable so that a test can turn the messages off). Cross-validated
// over the messages' folds (fit -tags), with 1,000 tagged reports,
// symptoms and components F1 on
// held-out messages is 0.592 / 0.584 / 0.647 / 0.611 (symptoms en, ko;
// components en, ko) learned from the library alone, 0.617 / 0.630 /
// 0.662 / 0.658 with each message once and 0.630 / 0.643 / 0.668 /
// 0.670 twice; the cases' own F1 moves by less than 0.01 either way.
var messageTags = 2

// gatherMessages adds the built-in messages that report trouble, each
// labelled with the symptoms and components it describes: what alerts,
// status updates and chat call a tag, which a case's write-up may not.
// Each is messageTags training texts and cases (for minCases) and one
// evaluation document, held out by fold as a case is, for its symptoms
// and components only. It is tokenized once; words, when not nil, holds
// each message's words by its index (see troubleStart).
func (d *learnData) gatherMessages(words [][]word) {
	kinds := kindBit(cases.KindSymptom) | kindBit(cases.KindComponent)
	for i, msg := range builtinMessages() {
		if !msg.Trouble {
			continue
		}
		var labels []int32
		for _, kl := range []struct {
			kind cases.Kind
			ids  []string
		}{{cases.KindSymptom, msg.Symptoms}, {cases.KindComponent, msg.Components}} {
			for _, id := range kl.ids {
				if l, ok := d.tagIdx[tagRef{kl.kind, id}]; ok {
					labels = append(labels, l)
				}
			}
		}
		if len(labels) == 0 {
			continue
		}
		set := d.setFor(labels, kinds)
		fold := caseFold(msg.Text, learnFolds)
		var feats []int32
		if words != nil {
			feats = slices.Clone(d.wordFeatures(words[i]))
		} else {
			feats = slices.Clone(d.features(msg.Text))
		}
		if len(feats) == 0 {
			continue
		}
		for range messageTags {
			d.count(feats, set, fold)
		}
		slices.Sort(feats)
		for range messageTags {
			d.cases[fold].add(set, feats)
		}
		lang := cases.English
		if msg.Lang == "ko" {
			lang = cases.Korean
		}
		var text string
		if d.keepText {
			text = msg.Text
		}
		d.docs = append(d.docs, trainDoc{feats: feats, labels: d.sets[set], fold: fold, lang: lang, text: text, kinds: kinds, message: true})
	}
}

// sentences splits a text into sentences (at ". ", "; ", "다. " and line
// ends), joining very short ones to the next.
func sentences(text string) []string {
	if !utf8.ValidString(text) {
		return sentencesRunes(text)
	}
	// Valid UTF-8 reads the same rune by rune as sentencesRunes does,
	// and each sentence is a piece of text: no copy is made.
	var out []string
	start := 0
	for i, r := range text {
		size := utf8.RuneLen(r)
		end := r == '\n'
		if !end && (r == '.' || r == ';' || r == '!' || r == '?' || r == '。') {
			next := i + size
			end = next == len(text) || text[next] == ' ' || text[next] == '\n'
		}
		if end && hasFields(text[start:i+size], 4) {
			if s := strings.TrimSpace(text[start : i+size]); s != "" {
				out = append(out, s)
			}
			start = i + size
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// hasFields reports whether s has at least n fields, as strings.Fields
// splits them.
func hasFields(s string, n int) bool {
	inField := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			inField = false
			continue
		}
		if !inField {
			inField = true
			if n--; n == 0 {
				return true
			}
		}
	}
	return false
}

// sentencesRunes is sentences of text that is not valid UTF-8, whose
// invalid bytes become U+FFFD.
func sentencesRunes(text string) []string {
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
// carry each tag, how many of them contain each feature, and how many cases
// do. Documents are counted per kind of tag they speak for (see setFor).
type counts struct {
	n    [numKinds]int32 // documents, per kind
	nt   []int32         // per tag
	df   []int32         // [f*numKinds+kind]
	pos  []int32         // [f*T+t]
	sup  []int32         // [f*T+t]: cases
	kind []uint8         // per tag: its kindIndex
}

func newCounts(v int, tags []tagRef) *counts {
	t := len(tags)
	c := &counts{nt: make([]int32, t), df: make([]int32, v*numKinds), pos: make([]int32, v*t), sup: make([]int32, v*t), kind: make([]uint8, t)}
	for i, r := range tags {
		c.kind[i] = uint8(kindIndex(r.Kind))
	}
	return c
}

// add adds (sign 1) or takes away (-1) a training text that speaks for
// the kinds of tag in kinds.
func (c *counts) add(feats, labels []int32, kinds uint8, sign int32) {
	t := len(c.nt)
	for k := range numKinds {
		if kinds&(1<<k) != 0 {
			c.n[k] += sign
		}
	}
	for _, l := range labels {
		c.nt[l] += sign
	}
	for _, f := range feats {
		df := c.df[int(f)*numKinds:]
		for k := range numKinds {
			if kinds&(1<<k) != 0 {
				df[k] += sign
			}
		}
		row := c.pos[int(f)*t:]
		for _, l := range labels {
			row[l] += sign
		}
	}
}

// addTexts adds or takes away the training texts of s.
func (c *counts) addTexts(d *learnData, s *texts, sign int32) {
	s.each(func(set int32, feats []int32) { c.add(feats, d.sets[set], d.kinds[set], sign) })
}

// addCases adds or takes away the cases of s.
func (c *counts) addCases(d *learnData, s *texts, sign int32) {
	t := len(c.nt)
	s.each(func(set int32, feats []int32) {
		labels := d.sets[set]
		for _, f := range feats {
			row := c.sup[int(f)*t:]
			for _, l := range labels {
				row[l] += sign
			}
		}
	})
}

// totals counts every training text.
func (d *learnData) totals() *counts {
	c := newCounts(len(d.df), d.tags)
	for k := range d.train {
		c.addTexts(d, &d.train[k], 1)
	}
	for k := range d.cases {
		c.addCases(d, &d.cases[k], 1)
	}
	return c
}

// row computes what feature f adds to each tag's score: the log of how
// much likelier the feature is in a document with the tag than without,
// when positive (evidence for the tag); 0 otherwise. Only evidence for a
// tag is counted, so a text with no known word gets no tag.
func (c *counts) row(f int, out []float32) {
	t := len(c.nt)
	for i, p := range c.pos[f*t : f*t+t] {
		k := int(c.kind[i])
		n := float64(c.n[k])
		df := float64(c.df[f*numKinds+k])
		nt := float64(c.nt[i])
		pp := (float64(p) + nbAlpha) / (nt + 2*nbAlpha)
		q := (df - float64(p) + nbAlpha) / (n - nt + 2*nbAlpha)
		if p < minSupport || c.sup[f*t+i] < minCases {
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
	for f := range len(c.df) / numKinds {
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
	fold := newCounts(v, d.tags)
	docs = make([]*trainDoc, 0, len(d.docs))
	scores = make([]float32, 0, len(d.docs)*t)
	for k := 0; k < learnFolds; k++ {
		copy(fold.pos, total.pos)
		copy(fold.sup, total.sup)
		copy(fold.df, total.df)
		copy(fold.nt, total.nt)
		fold.n = total.n
		fold.addTexts(d, &d.train[k], -1)
		fold.addCases(d, &d.cases[k], -1)
		var held []*trainDoc
		for i := range d.docs {
			if doc := &d.docs[i]; int(doc.fold) == k {
				held = append(held, doc)
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
//
// r says how sure it must be: the least score a threshold may be, the
// cross-validated precision it must reach, the held-out documents a tag
// needs.
func thresholds(docs []*trainDoc, scores []float32, tags []tagRef, r rule) []float32 {
	t := len(tags)
	theta := make([]float32, t)
	type sd struct {
		s   float32
		pos bool
	}
	col := make([]sd, len(docs))
	for i := 0; i < t; i++ {
		precision := r.precision
		if tags[i].Kind == cases.KindSymptom {
			precision = max(precision, r.symptom)
		}
		// A threshold is never below r.floor, and most documents score
		// below it: only the scores at or above it are sorted. Of the
		// rest only the highest matters, as the score just below the
		// lowest threshold (next); their positives come after every
		// threshold, so they count in npos alone.
		npos := 0
		col = col[:0]
		below, lo := false, float32(0)
		for j, doc := range docs {
			if doc.kinds&kindBit(tags[i].Kind) == 0 {
				continue
			}
			p := slices.Contains(doc.labels, int32(i))
			if p {
				npos++
			}
			s := scores[j*t+i]
			if s >= r.floor {
				col = append(col, sd{s, p})
			} else if !below || cmp.Compare(s, lo) > 0 {
				below, lo = true, s
			}
		}
		theta[i] = float32(math.Inf(1))
		if npos < r.support {
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
			// where it was right at least precision of the time.
			if float64(tp) < precision*float64(j+1) || x.s < r.floor {
				continue
			}
			f1 := 2 * float64(tp) / float64(j+1+npos)
			if f1 > best {
				best = f1
				next := x.s - 1
				switch {
				case j+1 < len(col):
					next = col[j+1].s
				case below:
					next = lo
				}
				theta[i] = max(r.floor, (x.s+next)/2)
			}
		}
		if best < 0.1 {
			theta[i] = float32(math.Inf(1))
		}
	}
	return theta
}

// learn trains the tag model and the trouble model on a library and a
// taxonomy.
func learn(lib *cases.Library, tax *cases.Taxonomy) *model {
	d := gather(lib, tax, false, true)
	d.prune()
	m := d.learnTags()
	m.TroubleW, m.TroubleB = d.troubleModel(-1, messageWeight)
	m.TroubleVocab = d.tvocab
	return m
}

// learnTags trains the tag model of tagModel.
func (d *learnData) learnTags() (m *model) {
	switch tagModel {
	case logitModel:
		return d.learnLogit()
	case bothModels:
		lr := d.learnLogit()
		defer func() { m.Also = lr }()
	}
	t := len(d.tags)
	total := d.totals()
	docs, scores := d.cvScores(total)
	m = &model{Tags: d.tags, Vocab: d.vocab, W: make([]float32, len(d.df)*t), B: make([]float32, t)}
	m.Theta = thresholds(docs, scores, d.tags, nbRule)
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
	for k := range d.train {
		d.train[k].remap(remap)
	}
	for k := range d.units {
		d.units[k].remap(remap)
	}
	for k := range d.cases {
		d.cases[k].remap(remap)
	}
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
	if m == nil {
		return nil
	}
	out := m.inferOne(text, minProb)
	if m.Also == nil {
		return out
	}
	// A tag both models find keeps the surer one's score and words.
	for _, lt := range m.Also.inferOne(text, minProb) {
		i := slices.IndexFunc(out, func(x learnedTag) bool { return x.tag == lt.tag })
		switch {
		case i < 0:
			out = append(out, lt)
		case lt.prob > out[i].prob:
			out[i] = lt
		}
	}
	slices.SortStableFunc(out, func(a, b learnedTag) int { return cmp.Compare(b.prob, a.prob) })
	return out
}

// inferOne is infer for this model alone.
func (m *model) inferOne(text string, minProb float64) []learnedTag {
	if len(m.B) == 0 {
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
	calib, minWeight := float32(calibScale), float32(1)
	if m.Calib > 0 {
		calib, minWeight = m.Calib, m.MinWeight
	}
	var out []learnedTag
	for i, x := range s {
		if math.IsInf(float64(m.Theta[i]), 1) {
			continue
		}
		p := 1 / (1 + math.Exp(-float64((x-m.Theta[i])/calib)))
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
			if x := m.W[int(f)*t+i]; x > minWeight {
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
