package matcher

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"

	"github.com/incidentbot/incidentbot/cases"
)

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

// TextsRemap stores records (a label set, then features) the way training
// texts are kept, remaps their features and reads them back.
func TextsRemap(records [][]int32, remap []int32) [][]int32 {
	var s texts
	for _, r := range records {
		s.add(r[0], r[1:])
	}
	s.remap(remap)
	var out [][]int32
	s.each(func(set int32, feats []int32) {
		out = append(out, append([]int32{set}, feats...))
	})
	return out
}

// LogitUnit is a training unit of LogitWeights: its tags and features.
type LogitUnit struct{ Labels, Feats []int32 }

// LogitWeights trains the logistic tag model on units labelled with tags
// 0 to tags-1 (all symptoms) over feats features, and returns its weights
// ([feature*tags+tag]).
func LogitWeights(tags, feats int, units []LogitUnit) []float32 {
	d := &learnData{}
	for i := range tags {
		d.tags = append(d.tags, tagRef{cases.KindSymptom, string(rune('a' + i))})
	}
	var us []unit
	for _, u := range units {
		us = append(us, unit{d.set(u.Labels), u.Feats})
	}
	w := make([]float32, feats*tags)
	d.fitLogit(us, w)
	return w
}

// SetTagModel switches the learned tag model for the matchers made until
// restore is called: "nb", "logit" or "both".
func SetTagModel(name string) (restore func()) {
	old := tagModel
	tagModel = map[string]int{"nb": nbModel, "logit": logitModel, "both": bothModels}[name]
	return func() { tagModel = old }
}

// LearnedWeight trains the tag model on lib and returns what an English
// word (stemmed as the index stems it) adds to the score of tag id of kind.
func LearnedWeight(lib *cases.Library, tax *cases.Taxonomy, word string, kind cases.Kind, id string) float32 {
	m := learn(lib, tax)
	i := slices.Index(m.Tags, tagRef{kind, id})
	var w float32
	terms(word, func(term string, _, _ int) {
		if f, ok := m.Vocab[term]; ok && i >= 0 {
			w = m.W[int(f)*len(m.Tags)+i]
		}
	})
	return w
}

// NBThresholds chooses the naive Bayes model's threshold of each of tags
// from held-out documents: their labels (indexes into tags) and scores.
func NBThresholds(tags []cases.Kind, labels [][]int32, scores [][]float32) []float32 {
	refs := make([]tagRef, len(tags))
	for i, k := range tags {
		refs[i] = tagRef{k, string(rune('a' + i))}
	}
	docs := make([]*trainDoc, len(labels))
	var flat []float32
	for j := range labels {
		docs[j] = &trainDoc{labels: labels[j], kinds: allKinds}
		flat = append(flat, scores[j]...)
	}
	return thresholds(docs, flat, refs, nbRule)
}

// TroubleOf trains the trouble model alone on lib and tax and returns how
// likely it finds that each text reports trouble.
func TroubleOf(lib *cases.Library, tax *cases.Taxonomy, texts []string) []float64 {
	d := &learnData{}
	d.gatherTrouble(lib, tax)
	m := &model{TroubleVocab: d.tvocab}
	m.TroubleW, m.TroubleB = d.troubleModel(-1, messageWeight)
	out := make([]float64, len(texts))
	for i, text := range texts {
		out[i] = m.trouble(text)
	}
	return out
}

// SetMessageTags sets how many times each built-in message that reports
// trouble counts for the tag model, until restore is called.
func SetMessageTags(n int) (restore func()) {
	old := messageTags
	messageTags = n
	return func() { messageTags = old }
}

// ReportShare is the share of the strongest signal of its kind a tag's
// signal needs to be reported.
const ReportShare = reportShare

// RealLibrary makes n cases from the built-in library's real texts: each
// case keeps one built-in case's title, symptoms text, trigger and tags and
// takes its summary from another, under a new id, so the words are real
// write-up words and no two cases are the same.
func RealLibrary(tb testing.TB, n int) *cases.Library {
	tb.Helper()
	set, err := cases.Builtin(cases.DefaultTaxonomy())
	if err != nil {
		tb.Fatal(err)
	}
	src := set.Cases
	out := &cases.Set{Name: "recombined"}
	for i := range n {
		base, other := src[i%len(src)], src[(i*7+3)%len(src)]
		c := *base
		c.ID = fmt.Sprintf("%s-r%05d", base.ID, i)
		c.Summary = other.Summary
		out.Cases = append(out.Cases, &c)
	}
	lib, _ := cases.NewLibrary(out)
	return lib
}

// SetMergeFrom merges the indexes of libraries of more than n cases.
func SetMergeFrom(n int) (restore func()) {
	old := mergeFrom
	mergeFrom = n
	return func() { mergeFrom = old }
}

// Segments is how many segments the matcher's index has, or -1 if it
// cannot say.
func Segments(m *Matcher) int {
	n, err := segmentCount(m.idx)
	if err != nil {
		return -1
	}
	return n
}

func segmentCount(idx bleve.Index) (int, error) {
	adv, err := idx.Advanced()
	if err != nil {
		return 0, err
	}
	r, err := adv.Reader()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return 0, fmt.Errorf("reader %T has no segments", r)
	}
	return len(snap.Segments()), nil
}
