package matcher_test

import (
	"slices"
	"testing"

	"github.com/incidentbot/incidentbot/matcher"
)

// TestLogitIgnoresCoOccurrence checks what the logistic model is for: a
// word that is in most texts of a tag, but just as often in texts without
// it ("kafka" beside cpu-saturation), is no evidence for the tag, while the
// word that tells the tag apart is. Naive Bayes, counting each word for
// every tag of its text, gives the shared word the tag's weight too. The
// model is also the same on every run.
func TestLogitIgnoresCoOccurrence(t *testing.T) {
	const (
		shared = iota // in nearly every text
		cpu           // only in tag 0's texts
		lag           // only in tag 1's texts
		other         // in neither tag's texts
		feats
	)
	var units []matcher.LogitUnit
	for i := range 60 {
		switch i % 3 {
		case 0:
			units = append(units, matcher.LogitUnit{Labels: []int32{0}, Feats: []int32{shared, cpu}})
		case 1:
			units = append(units, matcher.LogitUnit{Labels: []int32{1}, Feats: []int32{shared, lag}})
		default:
			f := []int32{shared, other}
			if i%2 == 0 {
				f = []int32{other}
			}
			units = append(units, matcher.LogitUnit{Labels: []int32{2}, Feats: f})
		}
	}
	w := matcher.LogitWeights(3, feats, units)
	weight := func(f, tag int) float32 { return w[f*3+tag] }
	if weight(cpu, 0) < 1 {
		t.Errorf("the telling word weighs %.2f for its tag, want at least 1", weight(cpu, 0))
	}
	if weight(shared, 0) > 0.25*weight(cpu, 0) {
		t.Errorf("the shared word weighs %.2f for tag 0, against %.2f for the telling word", weight(shared, 0), weight(cpu, 0))
	}
	if weight(lag, 0) >= 0 {
		t.Errorf("another tag's word weighs %.2f for tag 0, want below 0", weight(lag, 0))
	}
	if again := matcher.LogitWeights(3, feats, units); !slices.Equal(w, again) {
		t.Error("two trainings on the same units differ")
	}
}
