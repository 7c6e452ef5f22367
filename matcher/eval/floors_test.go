package eval_test

import (
	"cmp"
	"context"
	"math"
	"slices"
	"testing"

	"github.com/incidentbot/incidentbot/matcher/eval"
)

// floors are the least a held-out set must measure. A field left zero is
// issue 9's target (target fills them in): a set's floors are the targets
// where its first figures met them (go run ./matcher/cmd/eval -set
// heldoutN; README "Match quality", which gives every figure), and
// otherwise those figures less 0.02 (a Korean and English gap at most the
// figure plus 0.02). Each such floor gives its figure.
//
// One set is small: 38 chatter messages, about 40 status updates and 96
// English queries, so one query moves a figure by 0.01 to 0.03. How far a
// set's figures move when nothing real changes was measured: trained
// again with its examples shuffled by another seed, the trouble model
// moved some set's hit@3 and answered by up to four queries, a kind's
// hit@3 and silence by up to three, and the Korean and English gap by up
// to one and a half English and Korean queries (two seeds, 89 sets). Each
// reseeding crossed two or three floors that allowed one query. So each
// set may fall below its floors by as much as reseeding moved it (give),
// and the sets pooled must meet every target with no give
// (TestHeldoutFloors): a real regression shows there, over some 16,700
// positive queries, and a set that falls further than reseeding ever
// moved one still fails on its own.
type floors struct {
	ndcgOverBaseline float64 // nDCG@5 above the text-only baseline
	hit3             float64
	styleHit3        map[string]float64 // hit@3 per kind of query
	answered         float64
	silence          float64
	koEnGap          float64 // |hit@3 ko - hit@3 en|, at most
}

// queryKinds are the kinds of positive query a held-out set holds; the
// rest of its queries are chatter.
var queryKinds = []string{"alert", "chat", "report", "status"}

// target returns f with each field left zero set to issue 9's target:
// nDCG@5 0.15 above the baseline, hit@3 0.85 and 0.70 for every kind,
// answered 0.90, silence 0.95, and Korean within 0.05 of English.
func (f floors) target() floors {
	kinds := map[string]float64{}
	for _, k := range queryKinds {
		kinds[k] = cmp.Or(f.styleHit3[k], 0.70)
	}
	return floors{
		ndcgOverBaseline: cmp.Or(f.ndcgOverBaseline, 0.15),
		hit3:             cmp.Or(f.hit3, 0.85),
		styleHit3:        kinds,
		answered:         cmp.Or(f.answered, 0.90),
		silence:          cmp.Or(f.silence, 0.95),
		koEnGap:          cmp.Or(f.koEnGap, 0.05),
	}
}

// The give of each figure, in queries of what it is measured on: the most
// that retraining the trouble model with two other seeds moved that
// figure on any held-out set (see floors).
const (
	givePositives = 4 // hit@3, answered and nDCG@5 over the baseline
	giveKind      = 3 // hit@3 of one kind of query
	giveChatter   = 3 // silence
	giveLanguage  = 2 // the Korean and English gap, in queries of each
)

// give returns f lowered by what reseeding moved each figure of got (see
// the give constants): givePositives/positives for hit@3, answered and
// nDCG@5 over the baseline, giveKind/n of a kind for its hit@3,
// giveChatter/chatter for silence, and giveLanguage English and Korean
// queries for the gap between them.
func (f floors) give(got eval.Metrics) floors {
	per := func(q, n int) float64 { return float64(q) / float64(max(n, 1)) }
	kinds := map[string]float64{}
	for k, v := range f.styleHit3 {
		kinds[k] = v - per(giveKind, got.Kinds[k].N)
	}
	return floors{
		ndcgOverBaseline: f.ndcgOverBaseline - per(givePositives, got.Positives),
		hit3:             f.hit3 - per(givePositives, got.Positives),
		styleHit3:        kinds,
		answered:         f.answered - per(givePositives, got.Positives),
		silence:          f.silence - per(giveChatter, got.Chatter),
		koEnGap:          f.koEnGap + per(giveLanguage, got.Langs["en"].N) + per(giveLanguage, got.Langs["ko"].N),
	}
}

// TestHeldoutFloors holds the matcher's quality on each frozen held-out
// set in heldoutSets (heldout_test.go), against the built-in library their
// labels refer to: each set at its floors less what reseeding moved it
// (give), and all sets pooled at issue 9's targets.
func TestHeldoutFloors(t *testing.T) {
	var gots, bases []eval.Metrics
	for _, set := range heldoutSets {
		t.Run(set.name, func(t *testing.T) {
			got, base := measureSet(t, set.name, set.path())
			gots, bases = append(gots, got), append(bases, base)
			checkFloors(t, got, base, set.floors.target().give(got))
		})
	}
	t.Run("pooled", func(t *testing.T) {
		if len(gots) != len(heldoutSets) {
			t.Fatalf("%d of %d sets measured", len(gots), len(heldoutSets))
		}
		got, base := eval.Pool(gots), eval.Pool(bases)
		t.Log(eval.Format("all held-out sets", got))
		t.Log(eval.Format("all held-out sets, baseline", base))
		checkFloors(t, got, base, floors{}.target())
	})
}

// measureSet measures the matcher and the text-only baseline on the
// held-out set at path, against the built-in library.
func measureSet(t *testing.T, name, path string) (got, base eval.Metrics) {
	t.Helper()
	qs, err := eval.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got, base = runWithBaseline(t, name, builtinRig(t), qs)
	if got.Positives < 150 || got.Chatter < 20 {
		t.Fatalf("%d positive and %d chatter queries: the held-out set is not whole", got.Positives, got.Chatter)
	}
	return got, base
}

// checkFloors holds the figures got, and the baseline's base, to f.
func checkFloors(t *testing.T, got, base eval.Metrics, f floors) {
	t.Helper()
	if got.NDCG5 < base.NDCG5+f.ndcgOverBaseline {
		t.Errorf("nDCG@5 %.3f, baseline %.3f: want at least %.3f above", got.NDCG5, base.NDCG5, f.ndcgOverBaseline)
	}
	if got.Hit3 < f.hit3 {
		t.Errorf("hit@3 %.3f, floor %.3f", got.Hit3, f.hit3)
	}
	for kind, floor := range f.styleHit3 {
		s, ok := got.Kinds[kind]
		if !ok || s.N == 0 {
			t.Errorf("no %s queries in the held-out set", kind)
			continue
		}
		if s.Hit3 < floor {
			t.Errorf("%s: hit@3 %.3f, floor %.3f", kind, s.Hit3, floor)
		}
	}
	if got.Answered < f.answered {
		t.Errorf("answered %.3f of positive queries, floor %.3f", got.Answered, f.answered)
	}
	if got.Silence < f.silence {
		t.Errorf("silence on chatter %.3f, floor %.3f", got.Silence, f.silence)
	}
	if d := math.Abs(got.Hit3Ko - got.Hit3En); d > f.koEnGap {
		t.Errorf("Korean hit@3 %.3f vs English %.3f: %.3f apart, at most %.3f", got.Hit3Ko, got.Hit3En, d, f.koEnGap)
	}
}

// TestPool checks that pooling the runs of two sets gives the figures of
// one run over both sets' queries, so that the pooled floors hold what
// they say.
func TestPool(t *testing.T) {
	r := builtinRig(t)
	// Two parts with different silence and different shares of chatter,
	// so that a figure weighted by the wrong count shows.
	var parts [][]eval.Query
	for _, p := range []struct {
		name string
		from int
	}{{"heldout20", 0}, {"heldout40", 100}} {
		qs, err := eval.Load("../testdata/eval/" + p.name + ".jsonl")
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, qs[p.from:])
	}
	var runs []eval.Metrics
	for _, qs := range parts {
		m, err := eval.Run(context.Background(), r.m, qs)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, m)
	}
	whole, err := eval.Run(context.Background(), r.m, slices.Concat(parts...))
	if err != nil {
		t.Fatal(err)
	}
	got := eval.Pool(runs)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"hit@3", got.Hit3, whole.Hit3},
		{"MRR@5", got.MRR, whole.MRR},
		{"nDCG@5", got.NDCG5, whole.NDCG5},
		{"answered", got.Answered, whole.Answered},
		{"silence", got.Silence, whole.Silence},
		{"hit@3 en", got.Hit3En, whole.Hit3En},
		{"hit@3 ko", got.Hit3Ko, whole.Hit3Ko},
		{"gold MRR", got.GoldMRR, whole.GoldMRR},
		{"tag precision", got.TagP, whole.TagP},
		{"component F1", got.Components.F1, whole.Components.F1},
		{"status hit@3", got.Kinds["status"].Hit3, whole.Kinds["status"].Hit3},
	} {
		if !near(f.got, f.want) {
			t.Errorf("%s pooled %.6f, over the queries together %.6f", f.name, f.got, f.want)
		}
	}
	if got.Positives != whole.Positives || got.Chatter != whole.Chatter || got.Kinds["chat"].N != whole.Kinds["chat"].N {
		t.Errorf("pooled %d positive, %d chatter; together %d, %d", got.Positives, got.Chatter, whole.Positives, whole.Chatter)
	}
}
