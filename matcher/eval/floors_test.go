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
// latest figures meet them (go run ./matcher/cmd/eval -set heldoutN, with
// 5,443 built-in messages, the lead counted after the implied cause, a
// vague report's likeliest symptom and a Korean "[복구 중]" notice read as a
// report; README "Match quality"), and otherwise
// those figures less 0.02 (a Korean and English gap at most the figure
// plus 0.02), so that the test still catches a regression. Each floor
// gives its figure.

// heldoutFloors hold the first held-out set. It was written before the
// learned parts and has been run many times since; its figures chose
// nothing.
var heldoutFloors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.860 against 0.544
	hit3:             0.85, // target; measured 0.935
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.953
		"chat":   0.70, // target; measured 0.952
		"report": 0.70, // target; measured 0.938
		"status": 0.70, // target; measured 0.875
	},
	answered: 0.90, // target; measured 0.994
	silence:  0.95, // target; measured 1.000
	koEnGap:  0.05, // target; measured 0.015 (ko 0.945, en 0.930)
}

// heldout2Floors hold the second held-out set. Its first figures were taken
// at the commit that froze it (README "Second held-out set"); it has been
// run since, and chose nothing.
var heldout2Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.863 against 0.549
	hit3:             0.85, // target; measured 0.919
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.925
		"chat":   0.70, // target; measured 0.860
		"report": 0.70, // target; measured 1.000
		"status": 0.70, // target; measured 0.909
	},
	answered: 0.90, // target; measured 0.981
	silence:  0.95, // target; measured 1.000
	koEnGap:  0.05, // target; measured 0.030 (ko 0.900, en 0.930)
}

// heldout3Floors hold the third held-out set. It was written before the
// trouble model and frozen before the matcher was run on it (README "Third
// held-out set").
var heldout3Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.839 against 0.546
	hit3:             0.85, // target; measured 0.905
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.884
		"chat":   0.70, // target; measured 0.942
		"report": 0.70, // target; measured 1.000
		"status": 0.70, // target; measured 0.789
	},
	answered: 0.90, // target; measured 0.994
	silence:  0.95, // target; measured 1.000
	koEnGap:  0.05, // target; measured 0.007 (ko 0.909, en 0.902)
}

// heldout4Floors hold the fourth held-out set. It was written blind and
// frozen before the logistic trouble model and answer gate (README "Fourth
// held-out set").
var heldout4Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.861 against 0.589
	hit3:             0.85, // target; measured 0.960
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.978
		"chat":   0.70, // target; measured 0.942
		"report": 0.70, // target; measured 0.947
		"status": 0.70, // target; measured 0.975
	},
	answered: 0.90,  // target; measured 1.000
	silence:  0.927, // measured 0.947 (36 of 38) less 0.02; target 0.95
	koEnGap:  0.05,  // target; measured 0.003 (ko 0.962, en 0.959)
}

// heldout5Floors hold the fifth held-out set. It was a second blind measure
// of the logistic trouble model and answer gate.
var heldout5Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.864 against 0.545
	hit3:             0.85, // target; measured 0.898
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.935
		"chat":   0.70, // target; measured 0.846
		"report": 0.70, // target; measured 0.974
		"status": 0.70, // target; measured 0.850
	},
	answered: 0.90, // target; measured 0.943
	silence:  0.95, // target; measured 0.974
	koEnGap:  0.05, // target; measured 0.019 (ko 0.887, en 0.906)
}

// heldout6Floors hold the sixth held-out set. It was written blind and
// frozen before titles and impact joined the trouble model's reports (README
// "Sixth held-out set").
var heldout6Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.837 against 0.559
	hit3:             0.85, // target; measured 0.903
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.844
		"chat":   0.70, // target; measured 0.868
		"report": 0.70, // target; measured 1.000
		"status": 0.70, // target; measured 0.925
	},
	answered: 0.90, // target; measured 0.977
	silence:  0.95, // target; measured 1.000
	koEnGap:  0.05, // target; measured 0.040 (ko 0.925, en 0.885)
}

// heldout7Floors hold the seventh held-out set. It was written blind and
// frozen before the best text hit's lead joined the ranking (README "Seventh
// held-out set").
var heldout7Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.850 against 0.547
	hit3:             0.85, // target; measured 0.910
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.889
		"chat":   0.70, // target; measured 0.904
		"report": 0.70, // target; measured 0.949
		"status": 0.70, // target; measured 0.902
	},
	answered: 0.90, // target; measured 0.972
	silence:  0.95, // target; measured 1.000
	koEnGap:  0.05, // target; measured 0.030 (ko 0.926, en 0.896)
}

// heldout8Floors hold the eighth held-out set. It was written blind and
// frozen before the trouble model learned from the built-in messages (README
// "Eighth held-out set").
var heldout8Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.843 against 0.574
	hit3:             0.85, // target; measured 0.915
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.826
		"chat":   0.70, // target; measured 0.942
		"report": 0.70, // target; measured 0.947
		"status": 0.70, // target; measured 0.951
	},
	answered: 0.90, // target; measured 0.972
	silence:  0.95, // target; measured 1.000
	koEnGap:  0.05, // target; measured 0.019 (ko 0.904, en 0.923)
}

// heldout9Floors hold the ninth held-out set. It was written blind and
// frozen before the tag model learned from the built-in messages' tags
// (README "Ninth held-out set").
var heldout9Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.870 against 0.629
	hit3:             0.85, // target; measured 0.897
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.867
		"chat":   0.70, // target; measured 0.942
		"report": 0.70, // target; measured 0.974
		"status": 0.70, // target; measured 0.800
	},
	answered: 0.90, // target; measured 0.971
	silence:  0.95, // target; measured 1.000
	koEnGap:  0.05, // target; measured 0.045 (ko 0.922, en 0.878)
}

// heldout10Floors hold the tenth held-out set. It was written blind and
// frozen before the built-in messages grew from 1,720 to 2,920 (README
// "Tenth held-out set").
var heldout10Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.873 against 0.555
	hit3:             0.85, // target; measured 0.926
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.867
		"chat":   0.70, // target; measured 0.904
		"report": 0.70, // target; measured 1.000
		"status": 0.70, // target; measured 0.950
	},
	answered: 0.90,  // target; measured 0.977
	silence:  0.95,  // target; measured 1.000
	koEnGap:  0.090, // measured 0.069 (ko 0.963, en 0.894) plus 0.02; target 0.05
}

// heldout11Floors hold the eleventh held-out set. It was written blind and
// frozen before the best text hit's lead moved after the implied cause
// (README "Eleventh held-out set").
var heldout11Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.829 against 0.592
	hit3:             0.85, // target; measured 0.874
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.837
		"chat":   0.70, // target; measured 0.833
		"report": 0.70, // target; measured 0.946
		"status": 0.70, // target; measured 0.902
	},
	answered: 0.90,  // target; measured 0.960
	silence:  0.95,  // target; measured 0.974
	koEnGap:  0.094, // measured 0.073 (ko 0.914, en 0.840) plus 0.02; target 0.05
}

// heldout12Floors hold the twelfth held-out set. It was written blind and
// frozen before 2,000 more built-in messages were tried, and not kept
// (README "Twelfth and thirteenth held-out sets").
var heldout12Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.867 against 0.533
	hit3:             0.85, // target; measured 0.928
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.891
		"chat":   0.70, // target; measured 0.907
		"report": 0.70, // target; measured 0.974
		"status": 0.70, // target; measured 0.952
	},
	answered: 0.90, // target; measured 0.978
	silence:  0.95, // target; measured 1.000
	koEnGap:  0.05, // target; measured 0.037 (ko 0.909, en 0.946)
}

// heldout13Floors hold the thirteenth held-out set, written and used as the
// twelfth was.
var heldout13Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.825 against 0.564
	hit3:             0.85, // target; measured 0.898
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.932
		"chat":   0.70, // target; measured 0.870
		"report": 0.70, // target; measured 0.947
		"status": 0.70, // target; measured 0.850
	},
	answered: 0.90, // target; measured 0.966
	silence:  0.95, // target; measured 0.974
	koEnGap:  0.05, // target; measured 0.023 (ko 0.909, en 0.886)
}

// heldout14Floors hold the fourteenth held-out set. It was written blind
// and frozen before a vague report's likeliest symptom began to count
// (README "Fourteenth held-out set").
var heldout14Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.847 against 0.560
	hit3:             0.85, // target; measured 0.899
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.909
		"chat":   0.70, // target; measured 0.855
		"report": 0.70, // target; measured 0.974
		"status": 0.70, // target; measured 0.881
	},
	answered: 0.90,  // target; measured 0.966
	silence:  0.925, // measured 0.946 (35 of 37) less 0.02; target 0.95
	koEnGap:  0.05,  // target; measured 0.044 (ko 0.921, en 0.878)
}

// heldout15Floors hold the fifteenth held-out set, written blind as the
// fourteenth was; its first run measured the matcher as it stood, with no
// change after it (README "Fifteenth held-out set").
var heldout15Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.820 against 0.518
	hit3:             0.85, // target; measured 0.862
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.935
		"chat":   0.70, // target; measured 0.800
		"report": 0.70, // target; measured 0.897
		"status": 0.70, // target; measured 0.829
	},
	answered: 0.90,  // target; measured 0.950
	silence:  0.927, // measured 0.947 (36 of 38) less 0.02; target 0.95
	koEnGap:  0.090, // measured 0.070 (ko 0.898, en 0.828) plus 0.02; target 0.05
}

// heldout16Floors hold the sixteenth held-out set, written blind beside the
// seventeenth; its first run measured the matcher as it stood (README
// "Sixteenth and seventeenth held-out sets").
var heldout16Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.811 against 0.542
	hit3:             0.85, // target; measured 0.867
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.857
		"chat":   0.70, // target; measured 0.886
		"report": 0.70, // target; measured 0.909
		"status": 0.70, // target; measured 0.818
	},
	answered: 0.90,  // target; measured 0.934
	silence:  0.927, // measured 0.947 (36 of 38) less 0.02; target 0.95
	koEnGap:  0.05,  // target; measured 0.042 (ko 0.890, en 0.848)
}

// heldout17Floors hold the seventeenth held-out set, written blind beside
// the sixteenth; its first run measured the matcher as it stood.
var heldout17Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.827 against 0.546
	hit3:             0.85, // target; measured 0.903
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.894
		"chat":   0.70, // target; measured 0.870
		"report": 0.70, // target; measured 0.947
		"status": 0.70, // target; measured 0.911
	},
	answered: 0.90, // target; measured 0.989
	silence:  0.95, // target; measured 1.000
	koEnGap:  0.05, // target; measured 0.010 (ko 0.897, en 0.907)
}

// heldout18Floors hold the eighteenth held-out set, written blind beside the
// nineteenth; it was run once on the matcher as it stood and once with the
// built-in messages grown to 5,443 (README "Eighteenth and nineteenth
// held-out sets").
var heldout18Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.827 against 0.572
	hit3:             0.85, // target; measured 0.884
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.878
		"chat":   0.70, // target; measured 0.809
		"report": 0.70, // target; measured 1.000
		"status": 0.70, // target; measured 0.867
	},
	answered: 0.90,  // target; measured 0.967
	silence:  0.927, // measured 0.947 (36 of 38) less 0.02; target 0.95
	koEnGap:  0.05,  // target; measured 0.009 (ko 0.889, en 0.880)
}

// heldout19Floors hold the nineteenth held-out set, written blind beside the
// eighteenth and run as it was.
var heldout19Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.859 against 0.590
	hit3:             0.85, // target; measured 0.918
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.941
		"chat":   0.70, // target; measured 0.870
		"report": 0.70, // target; measured 0.952
		"status": 0.70, // target; measured 0.907
	},
	answered: 0.90,  // target; measured 0.973
	silence:  0.874, // measured 0.895 (34 of 38) less 0.02; target 0.95
	koEnGap:  0.072, // measured 0.051 (ko 0.944, en 0.892) plus 0.02; target 0.05
}

// heldout20Floors hold the twentieth held-out set, written blind beside the
// twenty-first; its first run measured the matcher as it stands (README
// "Twentieth to twenty-third held-out sets").
var heldout20Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.803 against 0.584
	hit3:             0.85, // target; measured 0.936
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.979
		"chat":   0.70, // target; measured 0.923
		"report": 0.70, // target; measured 0.977
		"status": 0.70, // target; measured 0.867
	},
	answered: 0.90,  // target; measured 0.995
	silence:  0.795, // measured 0.816 (31 of 38) less 0.02; target 0.95
	koEnGap:  0.05,  // target; measured 0.018 (ko 0.947, en 0.929)
}

// heldout21Floors hold the twenty-first held-out set, written blind beside
// the twentieth and run as it was.
var heldout21Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.845 against 0.583
	hit3:             0.85, // target; measured 0.915
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.957
		"chat":   0.70, // target; measured 0.911
		"report": 0.70, // target; measured 0.900
		"status": 0.70, // target; measured 0.891
	},
	answered: 0.90,  // target; measured 0.983
	silence:  0.848, // measured 0.868 (33 of 38) less 0.02; target 0.95
	koEnGap:  0.074, // measured 0.054 (ko 0.943, en 0.889) plus 0.02; target 0.05
}

// heldout22Floors hold the twenty-second held-out set, written blind beside
// the twenty-third; run once on the matcher as it stands and once with a
// change not kept.
var heldout22Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.836 against 0.626
	hit3:             0.85, // target; measured 0.932
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.957
		"chat":   0.70, // target; measured 0.957
		"report": 0.70, // target; measured 0.895
		"status": 0.70, // target; measured 0.911
	},
	answered: 0.90, // target; measured 0.977
	silence:  0.95, // target; measured 0.974
	koEnGap:  0.05, // target; measured 0.035 (ko 0.951, en 0.916)
}

// heldout23Floors hold the twenty-third held-out set, written blind beside
// the twenty-second and run as it was.
var heldout23Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.831 against 0.621
	hit3:             0.85, // target; measured 0.905
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.959
		"chat":   0.70, // target; measured 0.872
		"report": 0.70, // target; measured 0.895
		"status": 0.70, // target; measured 0.889
	},
	answered: 0.90,  // target; measured 0.966
	silence:  0.927, // measured 0.947 (36 of 38) less 0.02; target 0.95
	koEnGap:  0.05,  // target; measured 0.049 (ko 0.930, en 0.882)
}

// heldout24Floors hold the twenty-fourth held-out set, written blind beside
// the twenty-fifth; run once on the matcher as it stands and once with a
// change not kept.
var heldout24Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.821 against 0.562
	hit3:             0.85, // target; measured 0.870
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.905
		"chat":   0.70, // target; measured 0.922
		"report": 0.70, // target; measured 0.875
		"status": 0.70, // target; measured 0.773
	},
	answered: 0.90,  // target; measured 0.983
	silence:  0.901, // measured 0.921 (35 of 38) less 0.02; target 0.95
	koEnGap:  0.05,  // target; measured 0.007 (ko 0.874, en 0.867)
}

// heldout25Floors hold the twenty-fifth held-out set, written blind beside
// the twenty-fourth and run as it was.
var heldout25Floors = floors{
	ndcgOverBaseline: 0.15, // target; measured 0.835 against 0.583
	hit3:             0.85, // target; measured 0.898
	styleHit3: map[string]float64{
		"alert":  0.70, // target; measured 0.875
		"chat":   0.70, // target; measured 0.979
		"report": 0.70, // target; measured 0.921
		"status": 0.70, // target; measured 0.818
	},
	answered: 0.90,  // target; measured 0.972
	silence:  0.901, // measured 0.921 (35 of 38) less 0.02; target 0.95
	koEnGap:  0.05,  // target; measured 0.035 (ko 0.917, en 0.882)
}

// TestHeldoutFloors holds the matcher's quality on each frozen held-out
// set in heldoutSets (heldout_test.go), against the built-in library their
// labels refer to.
func TestHeldoutFloors(t *testing.T) {
	for _, set := range heldoutSets {
		t.Run(set.name, func(t *testing.T) {
			checkFloors(t, set.name, set.path(), set.floors)
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
