package eval_test

import (
	"math"
	"testing"

	"github.com/incidentbot/incidentbot/matcher/eval"
)

// floors are the least a held-out set must measure.
type floors struct {
	ndcgOverBaseline float64 // nDCG@5 above the text-only baseline
	hit3             float64
	styleHit3        map[string]float64 // hit@3 per kind of query
	answered         float64
	silence          float64
	koEnGap          float64 // |hit@3 ko - hit@3 en|, at most
}

// The floors of each held-out set are issue 9's targets where the set's
// latest figures meet them (go run ./matcher/cmd/eval -set heldoutN, since
// the tag model learned from the built-in messages' tags; README "Match
// quality"), and otherwise those figures less 0.02 (a Korean and English
// gap at most the figure plus 0.02), so that the test still catches a
// regression. Each floor gives its figure.

// heldoutFloors hold the first held-out set. It was written before the
// learned parts and has been run many times since; its figures chose
// nothing.
var heldoutFloors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.846 against 0.544
	hit3:             0.85, // target; measured 0.918
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.907
		"chat":   0.70, // target; measured 0.952
		"report": 0.70, // target; measured 1.000
		"status": 0.70, // target; measured 0.781
	},
	answered: 0.90, // target; measured 0.971
	silence:  0.95, // target; measured 1.000
	koEnGap:  0.05, // target; measured 0.014 (ko 0.927, en 0.913)
}

// heldout2Floors hold the second held-out set. Its first figures were taken
// at the commit that froze it (README "Second held-out set"); it has been
// run since, and chose nothing.
var heldout2Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.829 against 0.549
	hit3:             0.85, // target; measured 0.900
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.925
		"chat":   0.70, // target; measured 0.840
		"report": 0.70, // target; measured 0.973
		"status": 0.70, // target; measured 0.879
	},
	answered: 0.90,  // target; measured 0.975
	silence:  0.95,  // target; measured 1.000
	koEnGap:  0.100, // measured 0.080 (ko 0.850, en 0.930) plus 0.02; target 0.05
}

// heldout3Floors hold the third held-out set. It was written before the
// trouble model and frozen before the matcher was run on it (README "Third
// held-out set").
var heldout3Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.819 against 0.546
	hit3:             0.85, // target; measured 0.882
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.837
		"chat":   0.70, // target; measured 0.942
		"report": 0.70, // target; measured 0.972
		"status": 0.70, // target; measured 0.763
	},
	answered: 0.90, // target; measured 0.976
	silence:  0.95, // target; measured 1.000
	koEnGap:  0.05, // target; measured 0.003 (ko 0.883, en 0.880)
}

// heldout4Floors hold the fourth held-out set. It was written blind and
// frozen before the logistic trouble model and answer gate (README "Fourth
// held-out set").
var heldout4Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.845 against 0.589
	hit3:             0.85, // target; measured 0.920
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.935
		"chat":   0.70, // target; measured 0.904
		"report": 0.70, // target; measured 0.947
		"status": 0.70, // target; measured 0.900
	},
	answered: 0.90,  // target; measured 0.983
	silence:  0.927, // measured 0.947 less 0.02; target 0.95
	koEnGap:  0.072, // measured 0.052 (ko 0.949, en 0.897) plus 0.02; target 0.05
}

// heldout5Floors hold the fifth held-out set. It was a second blind measure
// of the logistic trouble model and answer gate.
var heldout5Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.861 against 0.545
	hit3:             0.85, // target; measured 0.881
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.891
		"chat":   0.70, // target; measured 0.827
		"report": 0.70, // target; measured 0.974
		"status": 0.70, // target; measured 0.850
	},
	answered: 0.90,  // target; measured 0.926
	silence:  0.927, // measured 0.947 less 0.02; target 0.95
	koEnGap:  0.05,  // target; measured 0.010 (ko 0.875, en 0.885)
}

// heldout6Floors hold the sixth held-out set. It was written blind and
// frozen before titles and impact joined the trouble model's reports (README
// "Sixth held-out set").
var heldout6Floors = floors{
	ndcgOverBaseline: 0.15,  // target; measured 0.797 against 0.559
	hit3:             0.787, // measured 0.807 less 0.02; target 0.85
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.778
		"chat":   0.70, // target; measured 0.774
		"report": 0.70, // target; measured 0.868
		"status": 0.70, // target; measured 0.825
	},
	answered: 0.90, // target; measured 0.949
	silence:  0.95, // target; measured 1.000
	koEnGap:  0.05, // target; measured 0.010 (ko 0.812, en 0.802)
}

// heldout7Floors hold the seventh held-out set. It was written blind and
// frozen before the best text hit's lead joined the ranking (README "Seventh
// held-out set").
var heldout7Floors = floors{
	ndcgOverBaseline: 0.15,  // target; measured 0.823 against 0.547
	hit3:             0.816, // measured 0.836 less 0.02; target 0.85
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.844
		"chat":   0.70, // target; measured 0.750
		"report": 0.70, // target; measured 0.949
		"status": 0.70, // target; measured 0.829
	},
	answered: 0.90, // target; measured 0.932
	silence:  0.95, // target; measured 1.000
	koEnGap:  0.05, // target; measured 0.017 (ko 0.827, en 0.844)
}

// heldout8Floors hold the eighth held-out set. It was written blind and
// frozen before the trouble model learned from the built-in messages (README
// "Eighth held-out set").
var heldout8Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.815 against 0.574
	hit3:             0.85, // target; measured 0.904
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.826
		"chat":   0.70, // target; measured 0.942
		"report": 0.70, // target; measured 0.974
		"status": 0.70, // target; measured 0.878
	},
	answered: 0.90, // target; measured 0.977
	silence:  0.95, // target; measured 1.000
	koEnGap:  0.05, // target; measured 0.000 (ko 0.904, en 0.904)
}

// heldout9Floors hold the ninth held-out set. It was written blind and
// frozen before the tag model learned from the built-in messages' tags
// (README "Ninth held-out set").
var heldout9Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.854 against 0.629
	hit3:             0.85, // target; measured 0.880
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.889
		"chat":   0.70, // target; measured 0.904
		"report": 0.70, // target; measured 0.947
		"status": 0.70, // target; measured 0.775
	},
	answered: 0.90,  // target; measured 0.960
	silence:  0.95,  // target; measured 0.974
	koEnGap:  0.118, // measured 0.098 (ko 0.935, en 0.837) plus 0.02; target 0.05
}

// heldoutSets are the frozen held-out sets and their floors, by the name
// go run ./matcher/cmd/eval -set gives each.
var heldoutSets = []struct {
	name, path string
	floors     floors
}{
	{"heldout", heldoutPath, heldoutFloors},
	{"heldout2", heldout2Path, heldout2Floors},
	{"heldout3", heldout3Path, heldout3Floors},
	{"heldout4", heldout4Path, heldout4Floors},
	{"heldout5", heldout5Path, heldout5Floors},
	{"heldout6", heldout6Path, heldout6Floors},
	{"heldout7", heldout7Path, heldout7Floors},
	{"heldout8", heldout8Path, heldout8Floors},
	{"heldout9", heldout9Path, heldout9Floors},
}

// TestHeldoutFloors holds the matcher's quality on each frozen held-out
// set, against the built-in library their labels refer to.
func TestHeldoutFloors(t *testing.T) {
	for _, set := range heldoutSets {
		t.Run(set.name, func(t *testing.T) {
			checkFloors(t, set.name, set.path, set.floors)
		})
	}
}

// checkFloors measures the matcher and the text-only baseline on the
// held-out set at path, against the built-in library, and holds f.
func checkFloors(t *testing.T, name, path string, f floors) {
	t.Helper()
	qs, err := eval.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got, base := runWithBaseline(t, name, builtinRig(t), qs)
	if got.Positives < 150 || got.Chatter < 20 {
		t.Fatalf("%d positive and %d chatter queries: the held-out set is not whole", got.Positives, got.Chatter)
	}
	if got.NDCG5 < base.NDCG5+f.ndcgOverBaseline {
		t.Errorf("nDCG@5 %.3f, baseline %.3f: want at least %.2f above", got.NDCG5, base.NDCG5, f.ndcgOverBaseline)
	}
	if got.Hit3 < f.hit3 {
		t.Errorf("hit@3 %.3f, floor %.2f", got.Hit3, f.hit3)
	}
	for kind, floor := range f.styleHit3 {
		s, ok := got.Kinds[kind]
		if !ok || s.N == 0 {
			t.Errorf("no %s queries in the held-out set", kind)
			continue
		}
		if s.Hit3 < floor {
			t.Errorf("%s: hit@3 %.3f, floor %.2f", kind, s.Hit3, floor)
		}
	}
	if got.Answered < f.answered {
		t.Errorf("answered %.3f of positive queries, floor %.2f", got.Answered, f.answered)
	}
	if got.Silence < f.silence {
		t.Errorf("silence on chatter %.3f, floor %.2f", got.Silence, f.silence)
	}
	if d := math.Abs(got.Hit3Ko - got.Hit3En); d > f.koEnGap {
		t.Errorf("Korean hit@3 %.3f vs English %.3f: %.3f apart, at most %.2f", got.Hit3Ko, got.Hit3En, d, f.koEnGap)
	}
}
