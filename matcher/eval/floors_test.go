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

// heldoutFloors are what issue 9 asks of the held-out set. Where the
// matcher does not reach a target yet, the floor is the measured figure
// less a small margin, so that the test still catches a regression; each
// such floor says so, and README "How matching works" gives the figure.
// Since the trouble model learned from the built-in messages, every
// target holds on this set (hit@3 0.900, answered 0.959, silence 0.969,
// Korean and English 0.040 apart).
var heldoutFloors = floors{
	ndcgOverBaseline: 0.15,
	hit3:             0.85,
	styleHit3: map[string]float64{
		"alert":  0.70,
		"chat":   0.70,
		"report": 0.70,
		"status": 0.70,
	},
	answered: 0.90,
	// Target; measured 0.969 (31 of its 32 chatter messages silent)
	// since the trouble model learned from the built-in messages, 0.906
	// to 0.938 before.
	silence: 0.95,
	koEnGap: 0.05,
}

// heldout2Floors hold the second held-out set. Its figures were taken once,
// by go run ./matcher/cmd/eval -set heldout2 at the commit that froze it
// (built-in library of 674 cases; README "Second held-out set" gives them).
// Where a figure meets issue 9's target, the floor is the target; where it
// does not, the floor is the measured figure less 0.02. Since the logistic
// trouble model and answer gate every target holds (hit@3 0.900, answered
// 0.956, silence 0.968, Korean and English 0.027 apart).
var heldout2Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.818 against 0.549
	hit3:             0.85,
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.925
		"chat":   0.70, // target; measured 0.860
		"report": 0.70, // target; measured 0.919
		"status": 0.70, // target; measured 0.909
	},
	answered: 0.90,
	silence:  0.95,
	koEnGap:  0.05,
}

// heldout3Floors hold the third held-out set. It was written before the
// trouble model and frozen before the matcher was run on it; its figures
// were taken in aggregate only and chose nothing (README "Third held-out
// set"). Since the trouble model learned from the built-in messages every
// target holds, and is held.
var heldout3Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.810 against 0.546
	hit3:             0.85, // target; measured 0.852 (0.840 before the built-in messages)
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.814
		"chat":   0.70, // target; measured 0.923
		"report": 0.70, // target; measured 0.944
		"status": 0.70, // target; measured 0.711 (0.658 before the built-in messages)
	},
	answered: 0.90, // target; measured 0.976
	silence:  0.95, // target; measured 1.000 (0.944 before the built-in messages)
	koEnGap:  0.05, // target; measured 0.033 (ko 0.870, en 0.837)
}

// heldout4Floors hold the fourth held-out set. It was written blind and
// frozen before the logistic trouble model and answer gate; its figures
// were taken twice, in aggregate only, on the matcher before that change
// and after it, and chose nothing (README "Fourth held-out set"). Targets
// met are held as targets; silence at its figure since the trouble model
// learned from the built-in messages, less 0.02.
var heldout4Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.837 against 0.589
	hit3:             0.85, // target; measured 0.892
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.891
		"chat":   0.70, // target; measured 0.885
		"report": 0.70, // target; measured 0.947
		"status": 0.70, // target; measured 0.875
	},
	answered: 0.90,  // target; measured 0.960
	silence:  0.901, // measured 0.921 (0.842 before the built-in messages) less 0.02; target 0.95
	koEnGap:  0.05,  // target; measured 0.012 (ko 0.899, en 0.887), 0.058 before the built-in messages
}

// heldout5Floors hold the fifth held-out set, a second blind measure of the
// logistic trouble model and answer gate: it was frozen before they
// reached main, and its figures were taken twice, in aggregate only, before
// and after, and chose nothing. Targets met are held as targets; silence
// at its figure since the trouble model learned from the built-in
// messages, less 0.02.
var heldout5Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.829 against 0.545
	hit3:             0.85, // target; measured 0.886
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.891
		"chat":   0.70, // target; measured 0.865
		"report": 0.70, // target; measured 0.921
		"status": 0.70, // target; measured 0.800
	},
	answered: 0.90,  // target; measured 0.920
	silence:  0.927, // measured 0.947 (0.789 before the built-in messages) less 0.02; target 0.95
	koEnGap:  0.05,  // target; measured 0.025 (ko 0.850, en 0.875)
}

// heldout6Floors hold the sixth held-out set. It was written blind and
// frozen before titles and impact joined the trouble model's reports; its
// figures were taken twice, in aggregate only, before and after that
// change, and chose nothing (README "Sixth held-out set"). Targets met are
// held as targets; the others at the second figure less 0.02 (the Korean
// and English gap at most the measured gap plus 0.02).
var heldout6Floors = floors{
	ndcgOverBaseline: 0.15,  // target; measured 0.786 against 0.559
	hit3:             0.792, // measured 0.812 (0.807 before the built-in messages) less 0.02; target 0.85
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.711 (0.689 before the built-in messages)
		"chat":   0.70, // target; measured 0.811
		"report": 0.70, // target; measured 0.921
		"status": 0.70, // target; measured 0.825
	},
	answered: 0.90,  // target; measured 0.949
	silence:  0.95,  // target; measured 1.000 (0.842 before the built-in messages)
	koEnGap:  0.089, // measured 0.069 (ko 0.850, en 0.781) plus 0.02; target 0.05
}

// heldout7Floors hold the seventh held-out set. It was written blind and
// frozen before the best text hit's lead joined the ranking; its figures
// were taken in aggregate only, before that change and with the lead at
// 0.2, and chose nothing (a third run, of a refit that was not kept, is in
// README "Seventh held-out set"). Targets met are held as targets; the
// others at the figure with the lead less 0.02.
var heldout7Floors = floors{
	ndcgOverBaseline: 0.15,  // target; measured 0.813 against 0.547
	hit3:             0.827, // measured 0.847 less 0.02; target 0.85
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.844
		"chat":   0.70, // target; measured 0.808
		"report": 0.70, // target; measured 0.949
		"status": 0.70, // target; measured 0.805
	},
	answered: 0.90, // target; measured 0.944
	silence:  0.95, // target; measured 0.974 (0.947 before the built-in messages)
	koEnGap:  0.05, // target; measured 0.008 (ko 0.852, en 0.844)
}

// heldout8Floors hold the eighth held-out set. It was written blind and
// frozen before the trouble model learned from the built-in messages; its
// figures were taken twice, in aggregate only, before that change and
// after it, and chose nothing (README "Eighth held-out set"). Every
// target holds, and is held.
var heldout8Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.807 against 0.574
	hit3:             0.85, // target; measured 0.893 (0.881 before)
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.783
		"chat":   0.70, // target; measured 0.942
		"report": 0.70, // target; measured 0.974
		"status": 0.70, // target; measured 0.878
	},
	answered: 0.90, // target; measured 0.966 (0.944 before)
	silence:  0.95, // target; measured 1.000 (0.684 before)
	koEnGap:  0.05, // target; measured 0.004 (ko 0.890, en 0.894)
}

// TestHeldoutFloors holds the matcher's quality on the frozen held-out set,
// against the built-in library its labels refer to.
func TestHeldoutFloors(t *testing.T) {
	checkFloors(t, "held-out", heldoutPath, heldoutFloors)
}

// TestHeldout2Floors holds the matcher's quality on the second frozen
// held-out set, against the built-in library.
func TestHeldout2Floors(t *testing.T) {
	checkFloors(t, "held-out 2", heldout2Path, heldout2Floors)
}

// TestHeldout3Floors holds the matcher's quality on the third frozen
// held-out set, against the built-in library.
func TestHeldout3Floors(t *testing.T) {
	checkFloors(t, "held-out 3", heldout3Path, heldout3Floors)
}

// TestHeldout4Floors holds the matcher's quality on the fourth frozen
// held-out set, against the built-in library.
func TestHeldout4Floors(t *testing.T) {
	checkFloors(t, "held-out 4", heldout4Path, heldout4Floors)
}

// TestHeldout5Floors holds the matcher's quality on the fifth frozen
// held-out set, against the built-in library.
func TestHeldout5Floors(t *testing.T) {
	checkFloors(t, "held-out 5", heldout5Path, heldout5Floors)
}

// TestHeldout6Floors holds the matcher's quality on the sixth frozen
// held-out set, against the built-in library.
func TestHeldout6Floors(t *testing.T) {
	checkFloors(t, "held-out 6", heldout6Path, heldout6Floors)
}

// TestHeldout7Floors holds the matcher's quality on the seventh frozen
// held-out set, against the built-in library.
func TestHeldout7Floors(t *testing.T) {
	checkFloors(t, "held-out 7", heldout7Path, heldout7Floors)
}

// TestHeldout8Floors holds the matcher's quality on the eighth frozen
// held-out set, against the built-in library.
func TestHeldout8Floors(t *testing.T) {
	checkFloors(t, "held-out 8", heldout8Path, heldout8Floors)
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
