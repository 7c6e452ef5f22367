package eval_test

import (
	"math"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
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
var heldoutFloors = floors{
	ndcgOverBaseline: 0.15,
	hit3:             0.845, // measured 0.865 with the trouble model less 0.02; target 0.85 (met at 518 cases, 0.876)
	styleHit3: map[string]float64{
		"alert":  0.70,
		"chat":   0.70,
		"report": 0.70,
		"status": 0.70,
	},
	answered: 0.90,
	// Measured 0.938 less 0.008; target 0.95. Letting what the tag model
	// finds count in full in a text the trouble model reads as a report
	// (gate_report) answers one more of its 32 chatter messages (0.969
	// before), and more of the cross-validated reports; README "The
	// trouble model" gives the figures.
	silence: 0.93,
	koEnGap: 0.05,
}

// heldout2Floors hold the second held-out set. Its figures were taken once,
// by go run ./matcher/cmd/eval -set heldout2 at the commit that froze it
// (built-in library of 674 cases; README "Second held-out set" gives them).
// Where a figure met issue 9's target, the floor is the target; where it
// did not, the floor is the measured figure less 0.02 (for the Korean and
// English gap, which is a ceiling, the measured gap plus 0.02).
var heldout2Floors = floors{
	ndcgOverBaseline: 0.15,  // target; measured 0.804 against 0.549
	hit3:             0.843, // measured 0.863 on its third run (trouble model) less 0.02; target 0.85
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.800
		"chat":   0.70, // target; measured 0.820
		"report": 0.70, // target; measured 0.811
		"status": 0.70, // target; measured 0.788
	},
	answered: 0.90,  // target; measured 0.919 on its third run (0.875 on its first)
	silence:  0.883, // measured 0.903 on its third run less 0.02 (0.871 on its first); target 0.95
	koEnGap:  0.107, // measured 0.087 on its third run (ko 0.917, en 0.830) plus 0.02; target 0.05
}

// heldout3Floors hold the third held-out set. It was written before the
// trouble model and frozen before the matcher was run on it; its figures
// were taken twice, in aggregate only: on the matcher before that change
// (commit 4b00bd1) and on the matcher after it (a0cc2ec), and chose
// nothing (README "Third held-out set"). Targets met are held as targets;
// the others at the second figure less 0.02 (for the Korean and English
// gap, the measured gap plus 0.02).
var heldout3Floors = floors{
	ndcgOverBaseline: 0.15,  // target; measured 0.808 against 0.546
	hit3:             0.779, // measured 0.799 less 0.02; target 0.85
	styleHit3: map[string]float64{
		"alert":  0.70,  // target; measured 0.767
		"chat":   0.70,  // target; measured 0.904
		"report": 0.70,  // target; measured 0.833
		"status": 0.638, // measured 0.658 less 0.02; target 0.70
	},
	answered: 0.873, // measured 0.893 less 0.02; target 0.90
	silence:  0.897, // measured 0.917 less 0.02; target 0.95
	koEnGap:  0.103, // measured 0.083 (ko 0.844, en 0.761) plus 0.02; target 0.05
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

// checkFloors measures the matcher and the text-only baseline on the
// held-out set at path, against the built-in library, and holds f.
func checkFloors(t *testing.T, name, path string, f floors) {
	t.Helper()
	qs, err := eval.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	set, err := cases.Builtin(cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	lib, _ := cases.NewLibrary(set)
	got, base := runWithBaseline(t, name, lib, qs)
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
