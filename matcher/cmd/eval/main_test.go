package main

import (
	"errors"
	"testing"

	"github.com/incidentbot/incidentbot/matcher/eval"
)

// TestDispatchRefusesPerQueryOnHeldout checks that no per-query view is
// given of any held-out set, so that nothing is tuned on their misses.
// The refusal comes before any query is loaded or matched.
func TestDispatchRefusesPerQueryOnHeldout(t *testing.T) {
	if len(eval.HeldoutSets) < 129 {
		t.Fatalf("%d held-out sets, want the hundred and twenty-nine", len(eval.HeldoutSets))
	}
	for _, set := range eval.HeldoutSets {
		for _, tc := range []struct {
			name          string
			tags          string
			misses, debug bool
		}{
			{name: "misses", misses: true},
			{name: "debug", debug: true},
			{name: "tags", tags: "fn"},
		} {
			t.Run(set+"/"+tc.name, func(t *testing.T) {
				err := dispatch(set, "", "../../testdata/library", "bm25", tc.tags, tc.misses, tc.debug)
				if !errors.Is(err, errHeldout) {
					t.Fatalf("dispatch(-set %s -%s) = %v, want the held-out refusal", set, tc.name, err)
				}
			})
		}
	}
}
