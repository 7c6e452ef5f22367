package matcher

import (
	"cmp"
	"math"
	"slices"

	"github.com/incidentbot/incidentbot/cases"
)

// Inferred is one tag a text suggests, how sure the matcher is of it, and the
// words of the text that suggest it.
type Inferred struct {
	ID       string   `json:"id"`
	Score    float64  `json:"score"`    // 0 to 1; higher is surer
	Evidence []string `json:"evidence"` // words or phrases of the text, strongest first
}

// Inference is what a text says about an incident, in taxonomy ids: the
// symptoms and components it describes and the root causes it implies, each
// list best first. It is how a caller labels a draft case from its text.
type Inference struct {
	Lang         cases.Lang `json:"language"`
	Symptoms     []Inferred `json:"symptoms"`
	Components   []Inferred `json:"components"`
	RootCauses   []Inferred `json:"root_causes"`
	Contributing []Inferred `json:"contributing"`
}

// Infer labels a text with the taxonomy's tags. It reads the text only (it
// does not search the library), so it suits long texts such as a postmortem
// draft as well as alerts.
func (m *Matcher) Infer(text string) Inference {
	inf := Inference{Lang: DetectLang(text), Symptoms: []Inferred{}, Components: []Inferred{}, RootCauses: []Inferred{}, Contributing: []Inferred{}}
	for _, t := range m.inferTags(text) {
		switch t.kind {
		case cases.KindSymptom:
			inf.Symptoms = append(inf.Symptoms, t.Inferred)
		case cases.KindComponent:
			inf.Components = append(inf.Components, t.Inferred)
		case cases.KindRootCause:
			inf.RootCauses = append(inf.RootCauses, t.Inferred)
		case cases.KindContributing:
			inf.Contributing = append(inf.Contributing, t.Inferred)
		}
	}
	return inf
}

// kindTag is an inferred tag with its kind.
type kindTag struct {
	kind cases.Kind
	Inferred
}

// inferTags returns the tags a text signals, best first: those the
// taxonomy's phrases find (a phrase is evidence enough: 0.5 and up with
// more and longer phrases) and those the learned model is at least even
// about, each with its surest score. Clauses that deny an impact ("no data
// was lost") are not read (see unsaid).
func (m *Matcher) inferTags(text string) []kindTag {
	byTag := map[tagRef]*kindTag{}
	var out []*kindTag
	put := func(kind cases.Kind, id string, score float64, evidence []string) {
		r := tagRef{kind, id}
		if t, ok := byTag[r]; ok {
			if score > t.Score {
				t.Score = score
			}
			for _, e := range evidence {
				if !slices.Contains(t.Evidence, e) {
					t.Evidence = append(t.Evidence, e)
				}
			}
			return
		}
		t := &kindTag{kind: kind, Inferred: Inferred{ID: id, Score: score, Evidence: slices.Clone(evidence)}}
		byTag[r] = t
		out = append(out, t)
	}
	text = unsaid(text)
	for _, s := range m.ext.Extract(text) {
		put(s.Kind, s.ID, min(1, 0.5+0.25*s.Weight), []string{s.Phrase})
	}
	for _, lt := range m.model.infer(text, 0.5) {
		put(lt.tag.Kind, lt.tag.ID, lt.prob, lt.evidence)
	}
	res := make([]kindTag, 0, len(out))
	for _, t := range out {
		t.Score = math.Round(t.Score*1000) / 1000
		res = append(res, *t)
	}
	slices.SortStableFunc(res, func(a, b kindTag) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return res
}
