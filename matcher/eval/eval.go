// Package eval measures match quality on a labelled set of queries: status
// updates, incident-report openings, alerts, incident-channel chat in English
// and Korean, and chatter that deserves no answer. It reports hit@3, MRR@5,
// nDCG@5 and the share of queries answered, overall, per kind and per
// language, tag precision and recall, the silence rate on chatter and how
// well a query's own case is found.
//
// The sets live in matcher/testdata/eval: the tuning set, which the
// taxonomy's phrases, the ranking and the answer gate were tuned on, and
// the held-out sets, each written apart from that tuning, blind to the
// matcher changes it measures, and frozen: their hashes are pinned by tests,
// and they are reported in aggregate only.
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

// HeldoutSets names the frozen held-out sets, oldest first. Each is the
// file matcher/testdata/eval/<name>.jsonl and the eval command's -set name;
// their pinned hashes and floors are in this package's tests. A new set is
// a new name at the end.
var HeldoutSets = []string{
	"heldout",
	"heldout2",
	"heldout3",
	"heldout4",
	"heldout5",
	"heldout6",
	"heldout7",
	"heldout8",
	"heldout9",
	"heldout10",
	"heldout11",
	"heldout12",
	"heldout13",
	"heldout14",
	"heldout15",
	"heldout16",
	"heldout17",
	"heldout18",
	"heldout19",
	"heldout20",
	"heldout21",
	"heldout22",
	"heldout23",
	"heldout24",
	"heldout25",
	"heldout26",
	"heldout27",
	"heldout28",
	"heldout29",
	"heldout30",
	"heldout31",
	"heldout32",
	"heldout33",
	"heldout34",
	"heldout35",
	"heldout36",
	"heldout37",
	"heldout38",
	"heldout39",
	"heldout40",
	"heldout41",
	"heldout42",
	"heldout43",
	"heldout44",
	"heldout45",
	"heldout46",
	"heldout47",
	"heldout48",
	"heldout49",
	"heldout50",
	"heldout51",
	"heldout52",
	"heldout53",
	"heldout54",
	"heldout55",
	"heldout56",
	"heldout57",
	"heldout58",
	"heldout59",
	"heldout60",
	"heldout61",
	"heldout62",
	"heldout63",
	"heldout64",
	"heldout65",
	"heldout66",
	"heldout67",
	"heldout68",
	"heldout69",
	"heldout70",
	"heldout71",
	"heldout72",
	"heldout73",
	"heldout74",
	"heldout75",
	"heldout76",
	"heldout77",
	"heldout78",
	"heldout79",
	"heldout80",
	"heldout81",
	"heldout82",
	"heldout83",
	"heldout84",
	"heldout85",
	"heldout86",
	"heldout87",
	"heldout88",
	"heldout89",
	"heldout90",
	"heldout91",
	"heldout92",
	"heldout93",
	"heldout94",
	"heldout95",
	"heldout96",
	"heldout97",
	"heldout98",
	"heldout99",
	"heldout100",
	"heldout101",
	"heldout102",
	"heldout103",
	"heldout104",
	"heldout105",
	"heldout106",
	"heldout107",
	"heldout108",
	"heldout109",
	"heldout110",
	"heldout111",
	"heldout112",
	"heldout113",
	"heldout114",
	"heldout115",
	"heldout116",
	"heldout117",
	"heldout118",
	"heldout119",
	"heldout120",
	"heldout121",
	"heldout122",
	"heldout123",
	"heldout124",
	"heldout125",
	"heldout126",
	"heldout127",
	"heldout128",
	"heldout129",
}

// Query is one labelled query of the evaluation set.
type Query struct {
	ID         string   `json:"id"`
	Lang       string   `json:"lang"`
	Kind       string   `json:"kind"` // status, report, alert, chat or chatter
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
	MRR        float64 `json:"mrr"` // MRR@5: over the top five of the ranking
	NDCG5      float64 `json:"ndcg_at_5"`
	TagP       float64 `json:"tag_precision"`
	TagR       float64 `json:"tag_recall"`
	Silence    float64 `json:"chatter_silence"`
	Hit3En     float64 `json:"hit_at_3_en"`
	Hit3Ko     float64 `json:"hit_at_3_ko"`
	GoldHit3   float64 `json:"gold_case_hit_at_3"` // over queries whose gold case is in the library
	GoldCounts int     `json:"gold_queries"`

	// Answered is the share of positive queries whose answer, after the
	// confidence floor, holds any case.
	Answered float64 `json:"answered"`
	// GoldMRR is the mean reciprocal rank of the gold case in the answer as
	// shown (top five, after the floor; 0 when it is not there), over the
	// queries whose gold case is in the library.
	GoldMRR float64 `json:"gold_case_mrr"`
	// Symptoms and Components score the extracted tags of each field
	// against the gold tags, micro-averaged over the positive queries.
	Symptoms   TagScore `json:"symptoms"`
	Components TagScore `json:"components"`
	// Kinds breaks the positive queries down by kind (status, report,
	// alert, chat); Langs by language (en, ko).
	Kinds map[string]Slice `json:"kinds"`
	Langs map[string]Slice `json:"langs"`

	Misses []string `json:"-"` // ids of positive queries with no relevant case in the top 3
	Noisy  []string `json:"-"` // ids of chatter queries that got an answer
}

// TagScore is precision, recall and F1 of extracted tags.
type TagScore struct {
	TP int     `json:"tp"`
	FP int     `json:"fp"`
	FN int     `json:"fn"`
	P  float64 `json:"precision"`
	R  float64 `json:"recall"`
	F1 float64 `json:"f1"`
}

// add counts the extracted tags got against the gold tags want.
func (t *TagScore) add(got, want []string) {
	for _, g := range got {
		if slices.Contains(want, g) {
			t.TP++
		} else {
			t.FP++
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.FN++
		}
	}
}

func (t *TagScore) finish() {
	if t.TP+t.FP > 0 {
		t.P = float64(t.TP) / float64(t.TP+t.FP)
	}
	if t.TP+t.FN > 0 {
		t.R = float64(t.TP) / float64(t.TP+t.FN)
	}
	if t.P+t.R > 0 {
		t.F1 = 2 * t.P * t.R / (t.P + t.R)
	}
}

// Slice holds the figures of a subset of the positive queries.
type Slice struct {
	N        int     `json:"n"`
	Hit3     float64 `json:"hit_at_3"`
	MRR      float64 `json:"mrr"`
	NDCG5    float64 `json:"ndcg_at_5"`
	Answered float64 `json:"answered"`
}

func (s *Slice) add(hit, rr, ndcg, answered float64) {
	s.N++
	s.Hit3 += hit
	s.MRR += rr
	s.NDCG5 += ndcg
	s.Answered += answered
}

func (s *Slice) finish() {
	if s.N == 0 {
		return
	}
	n := float64(s.N)
	s.Hit3 /= n
	s.MRR /= n
	s.NDCG5 /= n
	s.Answered /= n
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

// Relevant returns the cases of lib that count as a hit for q (gain 2 or
// more): its gold case, and the cases that share a gold symptom and a gold
// component with it.
func Relevant(q Query, lib *cases.Library) []*cases.Case {
	var out []*cases.Case
	for _, c := range lib.Cases() {
		if gain(q, c) >= relevant {
			out = append(out, c)
		}
	}
	return out
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
	mt := Metrics{Kinds: map[string]Slice{}, Langs: map[string]Slice{}}
	var all TagScore
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
		var gotS, gotC []string
		for _, s := range ans.Symptoms {
			gotS = append(gotS, s.ID)
		}
		for _, s := range ans.Components {
			gotC = append(gotC, s.ID)
		}
		mt.Symptoms.add(gotS, q.Symptoms)
		mt.Components.add(gotC, q.Components)
		all.add(prefixed("s:", gotS, "c:", gotC), prefixed("s:", q.Symptoms, "c:", q.Components))

		// hit@3 is what a user sees: a relevant case among the first
		// three of the answer, after the confidence floor. MRR@5 and
		// nDCG@5 measure the ranking itself, floor aside, as the baseline
		// has none.
		hit := 0.0
		for i, r := range ans.Results {
			if i < 3 && gain(q, r.Case) >= relevant {
				hit = 1
				break
			}
		}
		answered := 0.0
		if len(ans.Results) > 0 {
			answered = 1
		}
		ranked, err := m.Rank(ctx, q.Text, 5)
		if err != nil {
			return mt, fmt.Errorf("query %s: %w", q.ID, err)
		}
		rr := 0.0
		var dcg float64
		var gains []float64
		for i, r := range ranked.Results {
			if i == 5 {
				break
			}
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
		ndcg := 0.0
		if idcg > 0 {
			ndcg = dcg / idcg
		}
		mt.NDCG5 += ndcg
		if _, ok := m.Library().Get(q.Case); ok && q.Case != "" {
			mt.GoldCounts++
			for i, r := range ans.Results {
				if i == 5 {
					break
				}
				if r.Case.ID == q.Case {
					if i < 3 {
						mt.GoldHit3++
					}
					mt.GoldMRR += 1 / float64(i+1)
					break
				}
			}
		}
		mt.Hit3 += hit
		mt.MRR += rr
		mt.Answered += answered
		if hit == 0 {
			mt.Misses = append(mt.Misses, q.ID)
		}
		k := mt.Kinds[q.Kind]
		k.add(hit, rr, ndcg, answered)
		mt.Kinds[q.Kind] = k
		lang := q.Lang
		if lang != "ko" {
			lang = "en"
		}
		l := mt.Langs[lang]
		l.add(hit, rr, ndcg, answered)
		mt.Langs[lang] = l
	}
	mt.finish(all)
	return mt, nil
}

// finish turns the sums of m into means over the queries each is counted
// on, and scores the tag counts, all the tags together in all.
func (m *Metrics) finish(all TagScore) {
	if m.Positives > 0 {
		n := float64(m.Positives)
		m.Hit3 /= n
		m.MRR /= n
		m.NDCG5 /= n
		m.Answered /= n
	}
	if m.Chatter > 0 {
		m.Silence /= float64(m.Chatter)
	}
	if m.GoldCounts > 0 {
		m.GoldHit3 /= float64(m.GoldCounts)
		m.GoldMRR /= float64(m.GoldCounts)
	}
	all.finish()
	m.TagP, m.TagR = all.P, all.R
	m.Symptoms.finish()
	m.Components.finish()
	for _, group := range []map[string]Slice{m.Kinds, m.Langs} {
		for k, s := range group {
			s.finish()
			group[k] = s
		}
	}
	m.Hit3En = m.Langs["en"].Hit3
	m.Hit3Ko = m.Langs["ko"].Hit3
}

// Pool returns the figures of the runs ms taken together, as if their
// queries had been one set: each figure is weighted by the queries it is
// measured on, and tag scores add their counts. Misses and Noisy are left
// empty.
func Pool(ms []Metrics) Metrics {
	p := Metrics{Kinds: map[string]Slice{}, Langs: map[string]Slice{}}
	var tags TagScore
	for _, m := range ms {
		n, c, g := float64(m.Positives), float64(m.Chatter), float64(m.GoldCounts)
		p.Positives += m.Positives
		p.Chatter += m.Chatter
		p.GoldCounts += m.GoldCounts
		p.Hit3 += m.Hit3 * n
		p.MRR += m.MRR * n
		p.NDCG5 += m.NDCG5 * n
		p.Answered += m.Answered * n
		p.Silence += m.Silence * c
		p.GoldHit3 += m.GoldHit3 * g
		p.GoldMRR += m.GoldMRR * g
		p.Symptoms.addCounts(m.Symptoms)
		p.Components.addCounts(m.Components)
		tags.addCounts(m.Symptoms)
		tags.addCounts(m.Components)
		poolSlices(p.Kinds, m.Kinds)
		poolSlices(p.Langs, m.Langs)
	}
	p.finish(tags)
	return p
}

// addCounts adds the counts of o to t; finish computes the scores again.
func (t *TagScore) addCounts(o TagScore) {
	t.TP += o.TP
	t.FP += o.FP
	t.FN += o.FN
}

// poolSlices adds the finished slices of from to the sums in into, each
// figure weighted by its slice's queries; finish turns them back into
// means.
func poolSlices(into, from map[string]Slice) {
	for k, s := range from {
		n := float64(s.N)
		p := into[k]
		p.N += s.N
		p.Hit3 += s.Hit3 * n
		p.MRR += s.MRR * n
		p.NDCG5 += s.NDCG5 * n
		p.Answered += s.Answered * n
		into[k] = p
	}
}

// prefixed returns the ids of a with prefix pa followed by those of b with
// prefix pb, so that symptoms and components can be scored together.
func prefixed(pa string, a []string, pb string, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for _, x := range a {
		out = append(out, pa+x)
	}
	for _, x := range b {
		out = append(out, pb+x)
	}
	return out
}

// Format prints metrics as a table row.
func Format(name string, m Metrics) string {
	return fmt.Sprintf("%-28s hit@3 %.3f  MRR@5 %.3f  nDCG@5 %.3f  answered %.3f  tagP %.3f  tagR %.3f  silence %.3f  hit@3 en %.3f ko %.3f  gold@3 %.3f gold MRR %.3f (%d)",
		name, m.Hit3, m.MRR, m.NDCG5, m.Answered, m.TagP, m.TagR, m.Silence, m.Hit3En, m.Hit3Ko, m.GoldHit3, m.GoldMRR, m.GoldCounts)
}

// FormatDetail prints the breakdown of metrics: per kind and per language
// (hit@3, nDCG@5, answered), and tag precision, recall and F1 per field.
// Each line is indented under the row Format prints.
func FormatDetail(m Metrics) string {
	var b strings.Builder
	slice := func(name string, s Slice) {
		fmt.Fprintf(&b, "    %-10s n %3d  hit@3 %.3f  MRR@5 %.3f  nDCG@5 %.3f  answered %.3f\n", name, s.N, s.Hit3, s.MRR, s.NDCG5, s.Answered)
	}
	for _, k := range sortedKeys(m.Kinds) {
		slice(k, m.Kinds[k])
	}
	for _, k := range sortedKeys(m.Langs) {
		slice(k, m.Langs[k])
	}
	for _, f := range []struct {
		name string
		t    TagScore
	}{{"symptoms", m.Symptoms}, {"components", m.Components}} {
		fmt.Fprintf(&b, "    %-10s tag P %.3f  R %.3f  F1 %.3f\n", f.name, f.t.P, f.t.R, f.t.F1)
	}
	fmt.Fprintf(&b, "    positives %d, chatter %d (silence %.3f), gold-case queries %d", m.Positives, m.Chatter, m.Silence, m.GoldCounts)
	return b.String()
}

func sortedKeys(m map[string]Slice) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
