// Package eval measures match quality on a labelled set of queries: alerts,
// incident-channel chat in English and Korean, and chatter that deserves no
// answer. It reports hit@3, MRR, nDCG@5, tag precision and recall, and the
// silence rate on chatter.
package eval

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// Query is one labelled query of the evaluation set.
type Query struct {
	ID         string   `json:"id"`
	Lang       string   `json:"lang"`
	Kind       string   `json:"kind"` // alert, chat or chatter
	Source     string   `json:"source"`
	Text       string   `json:"text"`
	Symptoms   []string `json:"symptoms"`
	Components []string `json:"components"`
	Case       string   `json:"case,omitempty"`
}

// Chatter reports whether the query deserves no answer.
func (q Query) Chatter() bool { return q.Kind == "chatter" }

// Load reads queries from a JSON-lines file.
func Load(path string) ([]Query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}

// Read reads queries in JSON lines.
func Read(r io.Reader) ([]Query, error) {
	var qs []Query
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var q Query
		if err := json.Unmarshal([]byte(line), &q); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		qs = append(qs, q)
	}
	return qs, sc.Err()
}

// Metrics are the figures of one run.
type Metrics struct {
	Positives int `json:"positives"`
	Chatter   int `json:"chatter"`

	Hit3       float64 `json:"hit_at_3"`
	MRR        float64 `json:"mrr"`
	NDCG5      float64 `json:"ndcg_at_5"`
	TagP       float64 `json:"tag_precision"`
	TagR       float64 `json:"tag_recall"`
	Silence    float64 `json:"chatter_silence"`
	Hit3En     float64 `json:"hit_at_3_en"`
	Hit3Ko     float64 `json:"hit_at_3_ko"`
	GoldHit3   float64 `json:"gold_case_hit_at_3"` // over queries whose gold case is in the library
	GoldCounts int     `json:"gold_queries"`

	Misses []string `json:"-"` // ids of positive queries with no relevant case in the top 3
	Noisy  []string `json:"-"` // ids of chatter queries that got an answer
}

// gain grades how relevant a case is to a query: 3 for the query's gold
// case, 2 when it shares a gold symptom and a gold component (or just a
// symptom when the query names no component), 1 when it shares one of them.
func gain(q Query, c *cases.Case) float64 {
	if q.Case != "" && c.ID == q.Case {
		return 3
	}
	sym := overlaps(q.Symptoms, c.Symptoms)
	comp := overlaps(q.Components, c.Components)
	switch {
	case sym && (comp || len(q.Components) == 0):
		return 2
	case sym || comp:
		return 1
	}
	return 0
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// relevant is the relevance a result needs to count as a hit.
const relevant = 2

// Run matches every query and computes the metrics.
func Run(ctx context.Context, m *matcher.Matcher, qs []Query) (Metrics, error) {
	var mt Metrics
	var tp, fp, fn int
	var enN, koN, enHit, koHit float64
	for _, q := range qs {
		ans, err := m.Match(ctx, q.Text, 5)
		if err != nil {
			return mt, fmt.Errorf("query %s: %w", q.ID, err)
		}
		if q.Chatter() {
			mt.Chatter++
			if len(ans.Results) == 0 {
				mt.Silence++
			} else {
				mt.Noisy = append(mt.Noisy, q.ID)
			}
			continue
		}
		mt.Positives++
		var got []string
		for _, s := range ans.Symptoms {
			got = append(got, "s:"+s.ID)
		}
		for _, s := range ans.Components {
			got = append(got, "c:"+s.ID)
		}
		var want []string
		for _, s := range q.Symptoms {
			want = append(want, "s:"+s)
		}
		for _, s := range q.Components {
			want = append(want, "c:"+s)
		}
		for _, g := range got {
			if slices.Contains(want, g) {
				tp++
			} else {
				fp++
			}
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				fn++
			}
		}

		// hit@3 is what a user sees: a relevant case among the first
		// three of the answer, after the confidence floor. MRR and nDCG@5
		// measure the ranking itself, floor aside, as the baseline has none.
		hit := 0.0
		for i, r := range ans.Results {
			if i < 3 && gain(q, r.Case) >= relevant {
				hit = 1
				break
			}
		}
		ranked, err := m.Rank(ctx, q.Text, 5)
		if err != nil {
			return mt, fmt.Errorf("query %s: %w", q.ID, err)
		}
		rr := 0.0
		var dcg float64
		var gains []float64
		for i, r := range ranked.Results {
			g := gain(q, r.Case)
			if g >= relevant && rr == 0 {
				rr = 1 / float64(i+1)
			}
			dcg += (math.Pow(2, g) - 1) / math.Log2(float64(i+2))
		}
		for _, c := range m.Library().Cases() {
			if g := gain(q, c); g > 0 {
				gains = append(gains, g)
			}
		}
		slices.SortFunc(gains, func(a, b float64) int { return int(b - a) })
		var idcg float64
		for i, g := range gains {
			if i == 5 {
				break
			}
			idcg += (math.Pow(2, g) - 1) / math.Log2(float64(i+2))
		}
		if idcg > 0 {
			mt.NDCG5 += dcg / idcg
		}
		if _, ok := m.Library().Get(q.Case); ok && q.Case != "" {
			mt.GoldCounts++
			for i, r := range ans.Results {
				if i < 3 && r.Case.ID == q.Case {
					mt.GoldHit3++
				}
			}
		}
		mt.Hit3 += hit
		mt.MRR += rr
		if hit == 0 {
			mt.Misses = append(mt.Misses, q.ID)
		}
		if q.Lang == "ko" {
			koN++
			koHit += hit
		} else {
			enN++
			enHit += hit
		}
	}
	if mt.Positives > 0 {
		n := float64(mt.Positives)
		mt.Hit3 /= n
		mt.MRR /= n
		mt.NDCG5 /= n
	}
	if mt.Chatter > 0 {
		mt.Silence /= float64(mt.Chatter)
	}
	if tp+fp > 0 {
		mt.TagP = float64(tp) / float64(tp+fp)
	}
	if tp+fn > 0 {
		mt.TagR = float64(tp) / float64(tp+fn)
	}
	if enN > 0 {
		mt.Hit3En = enHit / enN
	}
	if koN > 0 {
		mt.Hit3Ko = koHit / koN
	}
	if mt.GoldCounts > 0 {
		mt.GoldHit3 /= float64(mt.GoldCounts)
	}
	return mt, nil
}

// Format prints metrics as a table row.
func Format(name string, m Metrics) string {
	return fmt.Sprintf("%-28s hit@3 %.3f  MRR %.3f  nDCG@5 %.3f  tagP %.3f  tagR %.3f  silence %.3f  hit@3 en %.3f ko %.3f  gold@3 %.3f (%d)",
		name, m.Hit3, m.MRR, m.NDCG5, m.TagP, m.TagR, m.Silence, m.Hit3En, m.Hit3Ko, m.GoldHit3, m.GoldCounts)
}
