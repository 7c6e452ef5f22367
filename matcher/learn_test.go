package matcher_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// TestTextsRemap checks the compact store of training texts: every text
// comes back in order with its label set and its remapped features, a text
// that loses all its features stays (it still counts as a document), and a
// text longer than a block is kept whole.
func TestTextsRemap(t *testing.T) {
	const v = 1000
	rng := rand.New(rand.NewPCG(3, 4))
	remap := make([]int32, v)
	next := int32(0)
	for f := range remap {
		remap[f] = -1
		if f%3 != 0 {
			remap[f] = next
			next++
		}
	}
	var records [][]int32
	for i := range 40000 {
		n := rng.IntN(30)
		switch i {
		case 7:
			n = 70000 // longer than a block
		case 8:
			n = 0
		}
		r := []int32{int32(i % 97)}
		for range n {
			r = append(r, int32(rng.IntN(v)))
		}
		if i == 9 {
			r = []int32{5, 0, 3, 999} // every feature dropped
		}
		records = append(records, r)
	}
	got := matcher.TextsRemap(records, remap)
	if len(got) != len(records) {
		t.Fatalf("%d texts back, want %d", len(got), len(records))
	}
	for i, r := range records {
		want := []int32{r[0]}
		for _, f := range r[1:] {
			if remap[f] >= 0 {
				want = append(want, remap[f])
			}
		}
		if !slices.Equal(got[i], want) {
			t.Fatalf("text %d: got %d values %v..., want %d values %v...", i, len(got[i]), got[i][:min(5, len(got[i]))], len(want), want[:min(5, len(want))])
		}
	}
}

// tagCase is a case of the synthetic libraries below.
func tagCase(id, symptom, component, cause, symptoms, summary string) *cases.Case {
	return &cases.Case{
		ID:           id,
		Title:        cases.Text{En: "Incident " + id},
		SymptomsText: cases.Text{En: symptoms},
		Summary:      cases.Text{En: summary},
		Symptoms:     []string{symptom},
		Components:   []string{component},
		RootCause:    cause,
	}
}

// twoKinds is a library of two kinds of incident, six cases each; every
// queue incident's summary tells of the quokka setting that caused it.
func twoKinds(extra ...*cases.Case) *cases.Library {
	var cs []*cases.Case
	for i := range 6 {
		cs = append(cs,
			tagCase(fmt.Sprintf("queue-%d", i), "queue-backlog", "api-gateway", "config-change",
				"Messages piled up in the queue for hours and consumers fell behind.",
				"Someone changed the quokka setting on the gateway. Engineers reverted the quokka setting after an hour."),
			tagCase(fmt.Sprintf("slow-%d", i), "high-latency", "cdn", "hardware-failure",
				"Pages loaded slowly for visitors in Europe.",
				"A failed disk in an edge server slowed every response. The server was replaced."))
	}
	lib, _ := cases.NewLibrary(&cases.Set{Name: "test", Cases: append(cs, extra...)})
	return lib
}

// A case's summary tells why it happened: its words teach the case's root
// cause and components, not its symptoms. Seen failing with the summary
// labelled with every tag of its case.
func TestSummaryTeachesNoSymptoms(t *testing.T) { checkSummaryTeachesNoSymptoms(t) }

// checkSummaryTeachesNoSymptoms checks the tag model in use: "quokka", a
// word of the summaries only, weighs nothing for queue-backlog (the
// summarised cases' symptom) nor for the symptoms named in also, and
// something for config-change (their root cause); "piled", a word of the
// symptoms texts, weighs something for queue-backlog.
func checkSummaryTeachesNoSymptoms(t *testing.T, also ...string) {
	t.Helper()
	lib, tax := twoKinds(), cases.DefaultTaxonomy()
	for _, s := range append([]string{"queue-backlog"}, also...) {
		if w := matcher.LearnedWeight(lib, tax, "quokka", cases.KindSymptom, s); w != 0 {
			t.Errorf("quokka, from summaries only, weighs %v for %s", w, s)
		}
	}
	if w := matcher.LearnedWeight(lib, tax, "quokka", cases.KindRootCause, "config-change"); w <= 0 {
		t.Errorf("quokka weighs %v for config-change, want > 0", w)
	}
	if w := matcher.LearnedWeight(lib, tax, "piled", cases.KindSymptom, "queue-backlog"); w <= 0 {
		t.Errorf("piled, from symptoms texts, weighs %v for queue-backlog, want > 0", w)
	}
}

// A word that one case says again and again is one case's coincidence, not
// evidence. Seen failing with minCases 1.
func TestOneCaseIsNoEvidence(t *testing.T) {
	tax := cases.DefaultTaxonomy()
	wombat := "The wombat dashboard went red. The wombat alarm paged the team. Operators saw the wombat queue grow. Nobody knew the wombat job had stopped."
	one := twoKinds(tagCase("queue-wombat-1", "queue-backlog", "api-gateway", "config-change", wombat, "A setting was changed."))
	if w := matcher.LearnedWeight(one, tax, "wombat", cases.KindComponent, "api-gateway"); w != 0 {
		t.Errorf("wombat, in one case, weighs %v for api-gateway", w)
	}
	two := twoKinds(
		tagCase("queue-wombat-1", "queue-backlog", "api-gateway", "config-change", wombat, "A setting was changed."),
		tagCase("queue-wombat-2", "queue-backlog", "api-gateway", "config-change", wombat, "A setting was changed."))
	if w := matcher.LearnedWeight(two, tax, "wombat", cases.KindComponent, "api-gateway"); w <= 0 {
		t.Errorf("wombat, in two cases, weighs %v for api-gateway, want > 0", w)
	}
}

// A symptom answers a message, so its threshold must be surer than other
// tags': right 0.5 of the time is enough for a component, not for a
// symptom. Seen failing with the symptom precision at 0.5.
func TestSymptomThresholdIsSurer(t *testing.T) {
	kinds := []cases.Kind{cases.KindSymptom, cases.KindComponent}
	var labels [][]int32
	var scores [][]float32
	for j := range 12 {
		s := float32(1)
		var l []int32
		if j < 4 { // four texts score 5; half of them have both tags
			s = 5
			if j < 2 {
				l = []int32{0, 1}
			}
		}
		labels = append(labels, l)
		scores = append(scores, []float32{s, s})
	}
	theta := matcher.NBThresholds(kinds, labels, scores)
	if !math.IsInf(float64(theta[0]), 1) {
		t.Errorf("symptom threshold %v at precision 0.5, want none", theta[0])
	}
	if math.IsInf(float64(theta[1]), 1) || theta[1] > 5 {
		t.Errorf("component threshold %v, want one at or below 5", theta[1])
	}
}

// TestMessageTagsTeachTheModel checks what the built-in messages' tags
// are for: cross-validated over the messages' folds, the tags the model
// gives the held-out messages match theirs better when it has learned
// from the other folds' messages than from the library's texts alone.
func TestMessageTagsTeachTheModel(t *testing.T) {
	lib := testLibrary(t)
	tax := cases.DefaultTaxonomy()
	f1 := func(n int) map[string]float64 {
		t.Helper()
		defer matcher.SetMessageTags(n)()
		out := map[string]float64{}
		for _, r := range matcher.CrossValidateTags(lib, tax) {
			if r.Messages && r.Method == "nb" {
				out[string(r.Kind)+" "+string(r.Lang)] = r.F1
			}
		}
		return out
	}
	without, with := f1(0), f1(2)
	if len(with) != 4 {
		t.Fatalf("message F1 by kind and language: %v, want symptoms and components in en and ko", with)
	}
	for k, w := range with {
		t.Logf("%s: model F1 on held-out messages %.3f from the library alone, %.3f with the messages", k, without[k], w)
		if w < without[k]+0.04 {
			t.Errorf("%s: F1 %.3f with the messages, %.3f without: want at least 0.04 more", k, w, without[k])
		}
	}
}
