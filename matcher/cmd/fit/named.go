package main

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"

	"github.com/incidentbot/incidentbot/matcher"
)

// The named model (-named): how likely the best text hit is the very
// incident a text is about, a logistic model over matcher.NamedFeatures.
// Its samples are the best text hit of every positive query the ranking fit
// asks: a positive when it is the query's own case (the tuning set's and
// the case queries' gold cases), a negative otherwise; the cross-validated
// cases' queries are all negatives, as their own case is not in the
// library they are asked of. The features read bleve's scores alone, not
// the tags, so one model serves every setting of the other weights.
//
// It is measured before it is used: five folds by a hash of the text, each
// sample scored by a model trained without its fold.

// namedSamples are the best text hits of the positive queries of ss.
func namedSamples(ss []scoredSet) []gateSample {
	var out []gateSample
	const k = 5
	for i, s := range ss {
		for j, q := range s.queries {
			if q.chatter {
				continue
			}
			for _, p := range s.scored[j].Candidates {
				if !p.First || p.Second == 0 {
					// The model reads nothing of a lone hit.
					continue
				}
				g := gateSample{x: matcher.NamedFeatures(p), weight: 1, set: i, j: j}
				if q.gold != "" && p.Case.ID == q.gold {
					g.y = 1
				}
				h := fnv.New32a()
				h.Write([]byte(q.text))
				g.fold = int(h.Sum32() % k)
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// fitNamedModel trains the named model on ss's samples and prints its
// cross-validated precision and recall at a few probabilities, and its
// area under the ROC curve.
func fitNamedModel(ss []scoredSet) []float64 {
	samples := namedSamples(ss)
	held := heldOut(samples)
	var pos, neg int
	for _, s := range samples {
		if s.y == 1 {
			pos++
		} else {
			neg++
		}
	}
	fmt.Printf("named model: %d best text hits, %d of them the query's own case; cross-validated:\n", len(samples), pos)
	for _, t := range []float64{0.3, 0.5, 0.7, 0.9} {
		var tp, fp int
		for i, s := range samples {
			if held[i] >= t {
				if s.y == 1 {
					tp++
				} else {
					fp++
				}
			}
		}
		fmt.Printf("  at %.1f: precision %.3f recall %.3f\n", t, float64(tp)/math.Max(1, float64(tp+fp)), float64(tp)/math.Max(1, float64(pos)))
	}
	idx := make([]int, len(samples))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmpFloat(held[b], held[a]) })
	var seenPos, area float64
	for _, i := range idx {
		if samples[i].y == 1 {
			seenPos++
		} else {
			area += seenPos
		}
	}
	fmt.Printf("  area under the ROC curve %.3f\n", area/math.Max(1, float64(pos*neg)))
	b := trainGate(samples, func(gateSample) bool { return true })
	for i := range b {
		b[i] = math.Round(b[i]*1e4) / 1e4
	}
	fmt.Printf("  model %v\n", b)
	return b
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
