package matcher_test

import (
	"math/rand/v2"
	"slices"
	"testing"

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
