package cases

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// maxRelated is how many related cases Relate gives a case.
const maxRelated = 3

// Relate picks, for each case of the library, up to three other cases that
// share its root cause or a component, with the reason in words ("same root
// cause (Config change); shared Authoritative DNS"). Shared components weigh
// most, then the root cause, then shared symptoms; newer cases win ties.
func Relate(lib *Library, tax *Taxonomy) map[string][]Related {
	out := map[string][]Related{}
	for _, c := range lib.Cases() {
		type cand struct {
			o     *Case
			score float64
			why   []string
		}
		var cands []cand
		for _, o := range lib.Cases() {
			if o.ID == c.ID {
				continue
			}
			var score float64
			var why []string
			if c.RootCause != "" && c.RootCause == o.RootCause {
				score += 1.5
				why = append(why, fmt.Sprintf("same root cause (%s)", tax.Label(KindRootCause, c.RootCause, English)))
			}
			for _, comp := range c.Components {
				if slices.Contains(o.Components, comp) {
					score += 2
					why = append(why, "shared "+tax.Label(KindComponent, comp, English))
				}
			}
			if score == 0 {
				continue
			}
			for _, s := range c.Symptoms {
				if slices.Contains(o.Symptoms, s) {
					score += 0.5
				}
			}
			cands = append(cands, cand{o, score, why})
		}
		slices.SortFunc(cands, func(a, b cand) int {
			if d := cmp.Compare(b.score, a.score); d != 0 {
				return d
			}
			if d := cmp.Compare(b.o.Date, a.o.Date); d != 0 {
				return d
			}
			return cmp.Compare(a.o.ID, b.o.ID)
		})
		var rel []Related
		for _, cd := range cands[:min(maxRelated, len(cands))] {
			rel = append(rel, Related{ID: cd.o.ID, Reason: strings.Join(cd.why, "; ")})
		}
		if rel == nil {
			rel = []Related{}
		}
		out[c.ID] = rel
	}
	return out
}
