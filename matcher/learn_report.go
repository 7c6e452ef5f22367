package matcher

import (
	"slices"

	"github.com/incidentbot/incidentbot/cases"
)

// TagF1 is the cross-validated quality of tag inference for one kind of tag
// in one language, micro-averaged over the held-out texts.
type TagF1 struct {
	Kind   cases.Kind `json:"kind"`
	Lang   cases.Lang `json:"lang"`
	Method string     `json:"method"` // "phrases", "nb", "logit", "both" (phrases and the model Infer uses) or "all" (phrases and both models)
	// Messages: of the built-in messages that report trouble, not of the
	// cases' titles and symptoms texts.
	Messages  bool    `json:"messages,omitempty"`
	Texts     int     `json:"texts"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
}

// CrossValidateTags measures tag inference on the library's own texts by
// k-fold cross-validation over its cases: each case's title and symptoms
// text, in each language, is labelled by a model trained without the case's
// fold (thresholds chosen without it too), and compared with the case's
// tags.
func CrossValidateTags(lib *cases.Library, tax *cases.Taxonomy) []TagF1 {
	d := gather(lib, tax, true, false)
	d.prune()
	// Both models score the same documents in the same order.
	docs, nbScores := d.cvScores(d.totals())
	_, lrScores := d.cvScoresLogit(nil)
	nb := nestedTags(docs, nbScores, d.tags, nbRule)
	lr := nestedTags(docs, lrScores, d.tags, logitRule)
	ext := NewExtractor(tax)
	type key struct {
		kind     cases.Kind
		lang     cases.Lang
		method   string
		messages bool
	}
	type tally struct{ tp, fp, fn, n int }
	res := map[key]*tally{}
	for j, doc := range docs {
		learned := nb[j]
		switch tagModel {
		case logitModel:
			learned = lr[j]
		case bothModels:
			learned = map[int32]bool{}
			for i := range nb[j] {
				learned[i] = true
			}
			for i := range lr[j] {
				learned[i] = true
			}
		}
		phrased := map[int32]bool{}
		for _, s := range ext.Extract(unsaid(doc.text)) {
			if i, ok := d.tagIdx[tagRef{s.Kind, s.ID}]; ok {
				phrased[i] = true
			}
		}
		both := map[int32]bool{}
		for i := range learned {
			both[i] = true
		}
		for i := range phrased {
			both[i] = true
		}
		all := map[int32]bool{}
		for i := range both {
			all[i] = true
		}
		for i := range nb[j] {
			all[i] = true
		}
		for i := range lr[j] {
			all[i] = true
		}
		for _, m := range []struct {
			name string
			got  map[int32]bool
		}{{"phrases", phrased}, {"nb", nb[j]}, {"logit", lr[j]}, {"both", both}, {"all", all}} {
			for _, kind := range []cases.Kind{cases.KindSymptom, cases.KindComponent, cases.KindRootCause} {
				if doc.kinds&kindBit(kind) == 0 {
					continue
				}
				k := key{kind, doc.lang, m.name, doc.message}
				tl := res[k]
				if tl == nil {
					tl = &tally{}
					res[k] = tl
				}
				tl.n++
				for i := range m.got {
					if d.tags[i].Kind != kind {
						continue
					}
					if slices.Contains(doc.labels, i) {
						tl.tp++
					} else {
						tl.fp++
					}
				}
				for _, l := range doc.labels {
					if d.tags[l].Kind == kind && !m.got[l] {
						tl.fn++
					}
				}
			}
		}
	}
	var out []TagF1
	for _, messages := range []bool{false, true} {
		for _, kind := range []cases.Kind{cases.KindSymptom, cases.KindComponent, cases.KindRootCause} {
			for _, lang := range []cases.Lang{cases.English, cases.Korean} {
				for _, method := range []string{"phrases", "nb", "logit", "both", "all"} {
					tl := res[key{kind, lang, method, messages}]
					if tl == nil {
						continue
					}
					f := TagF1{Kind: kind, Lang: lang, Method: method, Texts: tl.n, Messages: messages}
					if tl.tp+tl.fp > 0 {
						f.Precision = float64(tl.tp) / float64(tl.tp+tl.fp)
					}
					if tl.tp+tl.fn > 0 {
						f.Recall = float64(tl.tp) / float64(tl.tp+tl.fn)
					}
					if f.Precision+f.Recall > 0 {
						f.F1 = 2 * f.Precision * f.Recall / (f.Precision + f.Recall)
					}
					out = append(out, f)
				}
			}
		}
	}
	return out
}

// nestedTags gives each document the tags whose cross-validated score
// passes a threshold chosen on the other folds' documents only.
func nestedTags(docs []*trainDoc, scores []float32, tags []tagRef, r rule) []map[int32]bool {
	t := len(tags)
	out := make([]map[int32]bool, len(docs))
	for k := 0; k < learnFolds; k++ {
		var trainDocs []*trainDoc
		var trainScores []float32
		for j, doc := range docs {
			if int(doc.fold) != k {
				trainDocs = append(trainDocs, doc)
				trainScores = append(trainScores, scores[j*t:j*t+t]...)
			}
		}
		theta := thresholds(trainDocs, trainScores, tags, r)
		for j, doc := range docs {
			if int(doc.fold) != k {
				continue
			}
			out[j] = map[int32]bool{}
			for i := 0; i < t; i++ {
				if scores[j*t+i] >= theta[i] {
					out[j][int32(i)] = true
				}
			}
		}
	}
	return out
}
