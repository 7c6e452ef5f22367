// Command fit measures the matcher's learned parts by cross-validation and
// fits the ranking's weights.
//
//	go run ./matcher/cmd/fit -tags      cross-validated tag F1 per kind and language
//	go run ./matcher/cmd/fit -trouble   the trouble model's cross-validated figures
//	go run ./matcher/cmd/fit -weights -gate-model   fit the ranking weights and the logistic gate, print them
//	go run ./matcher/cmd/fit -weights -named -gate-model -write matcher/weights.json
//	                                    the ranking weights with the named model (how weights.json's are fitted)
//	go run ./matcher/cmd/fit -weights -gate-only -gate-model -v   refit the gate alone, with its cross-validated curve
//	go run ./matcher/cmd/fit -curve     the gate's answered and silence figures at each threshold
//	go run ./matcher/cmd/fit -unanswered  the first fold's unanswered reports and answered remediation steps
//
// The weights are fitted on three kinds of queries, never on the held-out
// sets: the tuning set (matcher/testdata/eval/tuning.jsonl) against the
// built-in and the test library; the tuning case queries
// (matcher/testdata/eval/tuning-cases.jsonl, each about one built-in
// incident, its case the most relevant; the ranking only) against the
// built-in library; and the built-in library's own cases by 5-fold
// cross-validation: each case's symptoms text (en, ko) and the opening of its
// summary are asked of a matcher built, and trained, without the case's fold;
// a result is relevant when it shares a symptom and a component with the
// case, and more relevant when it also shares the root cause. The ranking
// weights maximise nDCG@5: the cross-validated cases count half, the
// tuning set's two runs and the case queries a sixth each. With
// -gate-model (how weights.json is fitted) the gate is a logistic model over
// matcher.GateFeatures, its threshold chosen on cross-validated
// probabilities (see gatemodel.go); without it, the gate is the setting of
// the earlier rules (trouble score, and the trouble model's thresholds) that
// keeps chatter silent at least 0.94 of the time on the tuning set, in both
// libraries. Either way it maximises the share of positive queries answered
// plus the silence on chatter: the tuning set's, and, counted a tenth, the
// held-out cases' remediation steps, which are how responders talk about an
// incident without reporting trouble.
//
// The weight of the root cause the text implies is set, not fitted (-cause,
// 3 by default): a text that says "after a deploy" must clearly prefer
// deploy-caused cases, and the query sets barely reward it. Fitted over 1,
// 2 and 3 (-cause -1) it comes out at 1, with an objective 0.005 higher than
// at 3; at 1 and at 2 "p99 latency is up and the load balancer returns 502s
// after a deploy" ranks a datacenter cooling failure above deploy-caused
// cases. The
// floor and keep share of a shown case maximise the F1 of hit@3 and the
// precision of the shown cases.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/matcher/eval"
)

func main() {
	tags := flag.Bool("tags", false, "print cross-validated tag F1 per kind and language")
	trouble := flag.Bool("trouble", false, "print the trouble model's cross-validated figures on the library's own sentences")
	weights := flag.Bool("weights", false, "fit the ranking and gate weights")
	write := flag.String("write", "", "with -weights: write the fitted weights to this file")
	compare := flag.Bool("compare", false, "print the figures of weights.json and of a few variants of it (neighbour votes, cause weight)")
	cause := flag.Float64("cause", 3, "with -weights: the weight of the root cause the text implies, fixed rather than fitted (negative: fit it over 1, 2 and 3); see README")
	gateOnly := flag.Bool("gate-only", false, "with -weights: keep the ranking weights of weights.json, fit the gate and floor only")
	queries := flag.String("queries", "matcher/testdata/eval/tuning.jsonl", "tuning queries (JSON lines)")
	caseQueries := flag.String("case-queries", "matcher/testdata/eval/tuning-cases.jsonl", "tuning queries that are each about one built-in case (JSON lines), asked of the built-in library by the ranking fit")
	library := flag.String("library", "matcher/testdata/library", "test library directory")
	unanswered := flag.Bool("unanswered", false, "print the first cross-validation fold's positive queries that get no answer, and its remediation steps that get one, with their signals")
	curve := flag.Bool("curve", false, "print the gate's answered and silence figures at each threshold, the other weights as in weights.json")
	chatter := flag.Bool("chatter", false, "print the trouble score and signals of the tuning set's chatter (built-in library)")
	infer := flag.String("infer", "", "print the tags the built-in library's model infers for this text")
	flag.Parse()
	tax := cases.DefaultTaxonomy()
	bset, err := cases.Builtin(tax)
	if err != nil {
		fail(err)
	}
	builtin, _ := cases.NewLibrary(bset)
	if *chatter {
		qs, err := eval.Load(*queries)
		if err != nil {
			fail(err)
		}
		m, err := matcher.New(builtin, matcher.Options{})
		if err != nil {
			fail(err)
		}
		for _, q := range qs {
			if !q.Chatter() {
				continue
			}
			sc, err := m.Score(context.Background(), q.Text)
			if err != nil {
				fail(err)
			}
			var sig []string
			for _, s := range slices.Concat(sc.Symptoms, sc.Components) {
				sig = append(sig, fmt.Sprintf("%s<%s>%.2f", s.ID, s.Phrase, s.Weight))
			}
			fmt.Printf("%s trouble %.2f report %.3f %v\n", q.ID, matcher.DefaultWeights.Trouble(sc), sc.Report, sig)
		}
		m.Close()
	}
	if *infer != "" {
		m, err := matcher.New(builtin, matcher.Options{})
		if err != nil {
			fail(err)
		}
		data, _ := json.MarshalIndent(m.Infer(*infer), "", "  ")
		fmt.Println(string(data))
		m.Close()
	}
	if *tags {
		start := time.Now()
		rep := matcher.CrossValidateTags(builtin, tax)
		fmt.Printf("built-in library, %d cases, 5 folds, %s\n", builtin.Len(), time.Since(start).Round(time.Millisecond))
		fmt.Printf("%-9s %-12s %-4s %-8s %6s %6s %6s %6s\n", "texts of", "kind", "lang", "method", "texts", "P", "R", "F1")
		for _, r := range rep {
			of := "cases"
			if r.Messages {
				of = "messages"
			}
			fmt.Printf("%-9s %-12s %-4s %-8s %6d %6.3f %6.3f %6.3f\n", of, r.Kind, r.Lang, r.Method, r.Texts, r.Precision, r.Recall, r.F1)
		}
	}
	if *trouble {
		fmt.Printf("built-in library, %d cases, 5 folds: held-out sentences read as trouble\n", builtin.Len())
		// Every half percent, for the area under the ROC curve.
		var ps []float64
		for i := 1; i < 200; i++ {
			ps = append(ps, float64(i)/200)
		}
		for _, chat := range []bool{false, true} {
			name := "learned from the library's texts alone"
			if chat {
				name = "learned from the library's texts and the built-in messages (the model in use)"
			}
			fmt.Println(name)
			fmt.Printf("%6s %8s %8s %8s %8s | %8s %8s %8s %8s (built-in messages)\n", "p", "reports", "recall", "talk", "quiet", "reports", "recall", "talk", "quiet")
			fits := matcher.CrossValidateTrouble(builtin, tax, ps, chat)
			for _, f := range fits {
				if slices.Contains([]float64{0.03, 0.1, 0.5, 0.9, 0.99}, f.P) {
					fmt.Printf("%6.2f %8d %8.3f %8d %8.3f | %8d %8.3f %8d %8.3f\n", f.P, f.Reports, f.Recall, f.Talk, f.Quiet, f.MessageReports, f.MessageRecall, f.MessageTalk, f.MessageQuiet)
				}
			}
			lib, msg := rocArea(fits, false), rocArea(fits, true)
			fmt.Printf("area under the ROC curve %.3f (cases' sentences), %.3f (built-in messages)\n", lib, msg)
		}
	}
	if *compare {
		tuning, folds, err := sets(*queries, *library, builtin, tax)
		if err != nil {
			fail(err)
		}
		cs, err := caseSet(*caseQueries, builtin)
		if err != nil {
			fail(err)
		}
		all := slices.Concat(tuning, []set{cs}, folds)
		base := matcher.DefaultWeights
		for _, v := range []struct {
			name string
			set  func(w *matcher.Weights)
		}{
			{"weights.json", func(*matcher.Weights) {}},
			{"neighbour 0.25", func(w *matcher.Weights) { w.Neighbour = 0.25 }},
			{"neighbour 0.5", func(w *matcher.Weights) { w.Neighbour = 0.5 }},
			{"cause 1", func(w *matcher.Weights) { w.Cause = 1 }},
			{"cause 2", func(w *matcher.Weights) { w.Cause = 2 }},
			{"cause 3", func(w *matcher.Weights) { w.Cause = 3 }},
		} {
			w := base
			v.set(&w)
			scored, err := scoreAll(all, w)
			if err != nil {
				fail(err)
			}
			fs := pooled(scored, w)
			fmt.Printf("%-16s objective %.4f  %s\n", v.name, objective(fs), showRanking(fs))
		}
	}
	if *curve {
		tuning, folds, err := sets(*queries, *library, builtin, tax)
		if err != nil {
			fail(err)
		}
		w := matcher.DefaultWeights
		scored, err := scoreAll(slices.Concat(tuning, folds), w)
		if err != nil {
			fail(err)
		}
		reach := reachable(scored, w)
		fmt.Println("gate  answered: tuning/test tuning/built-in cv   silence: tuning chatter, remediation steps")
		gates := []float64{0.3, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9}
		if !slices.Contains(gates, w.Gate) {
			gates = append(gates, w.Gate)
			slices.Sort(gates)
		}
		for _, g := range gates {
			w.Gate = g
			fs := gateFigures(scored, reach, w)
			fmt.Printf("%.2f  %.3f %.3f %.3f   %.3f %.3f\n", g, fs[0].answered, fs[1].answered, fs[2].answered, min(fs[0].silence, fs[1].silence), fs[2].silence)
		}
	}
	if *unanswered {
		_, folds, err := sets(*queries, *library, builtin, tax)
		if err != nil {
			fail(err)
		}
		w := matcher.DefaultWeights
		scored, err := scoreAll(folds[:1], w)
		if err != nil {
			fail(err)
		}
		reach := reachable(scored, w)
		s := scored[0]
		for j, q := range s.queries {
			sc := s.scored[j]
			tr := w.Trouble(sc)
			if q.chatter == (reach[0][j] && tr >= w.Gate) {
				kind := "unanswered"
				if q.chatter {
					kind = "answered chatter"
				}
				text := q.text
				if r := []rune(text); len(r) > 160 {
					text = string(r[:160])
				}
				fmt.Printf("%s: trouble %.2f reach %v sym %.2f comp %.2f symL %.2f compL %.2f report %.3f %q\n", kind, tr, reach[0][j], sc.Sym, sc.Comp, sc.SymLearned, sc.CompLearned, sc.Report, text)
			}
		}
	}
	if *weights {
		if err := fit(*queries, *caseQueries, *library, builtin, tax, *write, *gateOnly, *cause); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fit:", err)
	os.Exit(1)
}

// query is one query of a fitting set with what makes a case relevant.
type query struct {
	text       string
	chatter    bool
	symptoms   []string
	components []string
	gold       string
	rootCause  string // known for the library's own cases
}

// set is one library with its queries; for cross-validation, one fold.
type set struct {
	name    string
	lib     *cases.Library
	queries []query
}

func gain(q query, c *cases.Case) float64 {
	if q.gold != "" && c.ID == q.gold {
		return 3
	}
	sym := slices.ContainsFunc(q.symptoms, func(s string) bool { return slices.Contains(c.Symptoms, s) })
	comp := slices.ContainsFunc(q.components, func(s string) bool { return slices.Contains(c.Components, s) })
	g := 0.0
	switch {
	case sym && (comp || len(q.components) == 0):
		g = 2
	case sym || comp:
		g = 1
	}
	if g > 0 && q.rootCause != "" && q.rootCause == c.RootCause {
		// The same trouble for the same reason is the more useful case.
		g++
	}
	return g
}

// opening is the first paragraph of a text, at most 400 bytes on a word
// boundary: how an incident report begins.
func opening(s string) string {
	s, _, _ = strings.Cut(s, "\n\n")
	if len(s) > 400 {
		s = s[:400]
		if i := strings.LastIndexByte(s, ' '); i > 0 {
			s = s[:i]
		}
	}
	return s
}

func sets(queries, library string, builtin *cases.Library, tax *cases.Taxonomy) ([]set, []set, error) {
	qs, err := eval.Load(queries)
	if err != nil {
		return nil, nil, err
	}
	tset, err := cases.Load(library, tax)
	if err != nil {
		return nil, nil, err
	}
	test, _ := cases.NewLibrary(tset)
	var tq []query
	for _, q := range qs {
		tq = append(tq, query{text: q.Text, chatter: q.Chatter(), symptoms: q.Symptoms, components: q.Components, gold: q.Case})
	}
	tuning := []set{{"tuning/test library", test, tq}, {"tuning/built-in", builtin, tq}}
	const k = 5
	var folds []set
	for f := 0; f < k; f++ {
		var train, held []*cases.Case
		for i, c := range builtin.Cases() {
			if i%k == f {
				held = append(held, c)
			} else {
				train = append(train, c)
			}
		}
		lib, _ := cases.NewLibrary(&cases.Set{Name: "train", Cases: train})
		var fq []query
		for _, c := range held {
			for _, t := range []string{c.SymptomsText.En, c.SymptomsText.Ko, opening(c.Summary.En)} {
				if strings.TrimSpace(t) != "" {
					fq = append(fq, query{text: t, symptoms: c.Symptoms, components: c.Components, rootCause: c.RootCause})
				}
			}
			// What responders did is talk about an incident, not a report
			// of trouble: the chatter of an incident channel ("rolled back
			// the deploy", "restarted the primary") that deserves no answer.
			for _, st := range c.Remediation {
				for _, t := range []string{st.Text.En, st.Text.Ko} {
					if strings.TrimSpace(t) != "" {
						fq = append(fq, query{text: t, chatter: true})
					}
				}
			}
		}
		folds = append(folds, set{fmt.Sprintf("cv fold %d", f), lib, fq})
	}
	return tuning, folds, nil
}

// caseSet is the tuning queries that are each about one built-in case
// (status updates, report openings, alerts and chat written about it, in
// other words than its own), asked of the built-in library: the
// cross-validated cases cannot say how well a text that names an incident
// finds it, as each is asked of a library without its own case.
func caseSet(path string, builtin *cases.Library) (set, error) {
	qs, err := eval.Load(path)
	if err != nil {
		return set{}, err
	}
	var cq []query
	for _, q := range qs {
		if _, ok := builtin.Get(q.Case); !ok || q.Chatter() {
			return set{}, fmt.Errorf("%s: query %s is not about a built-in case", path, q.ID)
		}
		cq = append(cq, query{text: q.Text, symptoms: q.Symptoms, components: q.Components, gold: q.Case})
	}
	return set{"tuning cases/built-in", builtin, cq}, nil
}

// scoredSet is a set's queries scored under one setting of the weights
// that shape the text's tags.
type scoredSet struct {
	set
	scored []*matcher.Scored
	idcg   []float64 // per query
}

// shared are the weights every fitting matcher reads: one matcher per
// library is built (and trained) once, and each setting is tried by
// changing these.
var shared matcher.Weights

// matchers are keyed by library: the tuning set's built-in run and the case
// queries share one.
var matchers = map[*cases.Library]*matcher.Matcher{}

func scoreAll(ss []set, w matcher.Weights) ([]scoredSet, error) {
	shared = w
	var out []scoredSet
	for _, s := range ss {
		m := matchers[s.lib]
		if m == nil {
			var err error
			if m, err = matcher.New(s.lib, matcher.Options{Weights: &shared}); err != nil {
				return nil, err
			}
			matchers[s.lib] = m
		}
		x := scoredSet{set: s, idcg: idcgs(s)}
		for _, q := range s.queries {
			sc, err := m.Score(context.Background(), q.text)
			if err != nil {
				m.Close()
				return nil, err
			}
			x.scored = append(x.scored, sc)
		}
		out = append(out, x)
	}
	return out, nil
}

type figures struct {
	ndcg, hit3, answered, silence float64
	// shownP is the share of shown cases that share a tag with the query.
	shownP float64
}

func measure(s scoredSet, w matcher.Weights) figures {
	var f figures
	var pos, chat, shownN, shownRel float64
	for i, q := range s.queries {
		sc := s.scored[i]
		cands := slices.Clone(sc.Candidates)
		scores := w.Order(cands)
		shown := w.Answers(sc, cands, scores, 5, w.Floor)
		if q.chatter {
			chat++
			if shown == 0 {
				f.silence++
			}
			continue
		}
		pos++
		if shown > 0 {
			f.answered++
		}
		var dcg float64
		hit := 0.0
		for j, p := range cands {
			if j == 5 {
				break
			}
			g := gain(q, p.Case)
			dcg += (math.Pow(2, g) - 1) / math.Log2(float64(j+2))
			if j < 3 && j < shown && g >= 2 {
				hit = 1
			}
			if j < shown {
				shownN++
				if g >= 1 {
					shownRel++
				}
			}
		}
		if idcg := s.idcg[i]; idcg > 0 {
			f.ndcg += dcg / idcg
		}
		f.hit3 += hit
	}
	if shownN > 0 {
		f.shownP = shownRel / shownN
	}
	f.share(pos, chat)
	return f
}

// share turns f's sums into shares: nDCG, hit@3 and answered over the pos
// positive queries, silence over the chat chatter ones (NaN without any).
func (f *figures) share(pos, chat float64) {
	if pos > 0 {
		f.ndcg /= pos
		f.hit3 /= pos
		f.answered /= pos
	}
	if chat > 0 {
		f.silence /= chat
	} else {
		f.silence = math.NaN()
	}
}

var idcgCache = map[string][]float64{}

// idcgs is the best DCG@5 each query of a set could get.
func idcgs(s set) []float64 {
	if v, ok := idcgCache[s.name]; ok {
		return v
	}
	var out []float64
	for _, q := range s.queries {
		var gains []float64
		for _, c := range s.lib.Cases() {
			if g := gain(q, c); g > 0 {
				gains = append(gains, g)
			}
		}
		slices.SortFunc(gains, func(a, b float64) int { return int(b - a) })
		var idcg float64
		for j, g := range gains {
			if j == 5 {
				break
			}
			idcg += (math.Pow(2, g) - 1) / math.Log2(float64(j+2))
		}
		out = append(out, idcg)
	}
	idcgCache[s.name] = out
	return out
}

// pooled pools the cross-validation folds into one figure.
func pooled(ss []scoredSet, w matcher.Weights) []figures {
	return pool(ss, func(_ int, s scoredSet) figures { return measure(s, w) })
}

// pool gives the figures fig finds for each set, the cross-validation
// folds pooled into one figure, their mean, last.
func pool(ss []scoredSet, fig func(i int, s scoredSet) figures) []figures {
	var out []figures
	var cv figures
	n := 0
	for i, s := range ss {
		f := fig(i, s)
		if strings.HasPrefix(s.name, "cv ") {
			cv.ndcg += f.ndcg
			cv.hit3 += f.hit3
			cv.answered += f.answered
			cv.shownP += f.shownP
			cv.silence += f.silence
			n++
			continue
		}
		out = append(out, f)
	}
	if n > 0 {
		cv.ndcg /= float64(n)
		cv.hit3 /= float64(n)
		cv.answered /= float64(n)
		cv.shownP /= float64(n)
		cv.silence /= float64(n)
		out = append(out, cv)
	}
	return out
}

// objective weighs the cross-validated cases as much as the three tuning
// runs together (fs: the tuning set in the test and the built-in library,
// the case queries, the cross-validated cases): their text is written
// unlike the tuning queries, as the held-out set's status updates and
// incident reports are. About a third of what it weighs asks for a known
// incident, as about a third of the held-out sets' positive queries do.
func objective(fs []figures) float64 {
	return (fs[0].ndcg+fs[1].ndcg+fs[2].ndcg)/6 + 0.5*fs[3].ndcg
}

// showRanking shows the figures of the ranking fit's sets.
func showRanking(fs []figures) string {
	return showNamed([]string{"tuning/test", "tuning/built-in", "tuning cases", "cv built-in"}, fs)
}

func show(fs []figures) string {
	return showNamed([]string{"tuning/test", "tuning/built-in", "cv built-in"}, fs)
}

func showNamed(names []string, fs []figures) string {
	var parts []string
	for i, f := range fs {
		parts = append(parts, fmt.Sprintf("%s nDCG %.3f hit3 %.3f ans %.2f sil %.2f", names[i], f.ndcg, f.hit3, f.answered, f.silence))
	}
	return strings.Join(parts, " | ")
}

func fit(queries, caseQueries, library string, builtin *cases.Library, tax *cases.Taxonomy, write string, gateOnly bool, fixedCause float64) error {
	// Fitted, the cause weight is at least 1: below that "after a deploy"
	// would only break ties between equally relevant cases.
	causes := []float64{1, 2, 3}
	if fixedCause >= 0 {
		causes = []float64{fixedCause}
	}
	tuning, folds, err := sets(queries, library, builtin, tax)
	if err != nil {
		return err
	}
	all := slices.Concat(tuning, folds)
	cs, err := caseSet(caseQueries, builtin)
	if err != nil {
		return err
	}
	// The ranking is fitted on the case queries too; the gate is not: they
	// are all trouble, and say nothing of what deserves no answer.
	ranked := slices.Concat(tuning, []set{cs}, folds)
	best := matcher.DefaultWeights
	bestObj := -1.0
	start := time.Now()
	namedGrid := []float64{0}
	if *named {
		learnedGrid, neighbourGrid = []float64{1}, []float64{0}
		textGrid, tagGrid, leadGrid = []float64{0.25, 0.5, 0.75, 1}, []float64{2, 3}, []float64{0.4, 0.6, 0.8}
		namedGrid = []float64{0, 0.5, 1, 1.5, 2, 3}
		scored, err := scoreAll(ranked, best)
		if err != nil {
			return err
		}
		best.NamedModel = fitNamedModel(scored)
	}
	for _, learned := range learnedGrid {
		if gateOnly {
			break
		}
		for _, nb := range neighbourGrid {
			for _, top := range []int{5} {
				w := best
				w.Phrase, w.Learned, w.Neighbour, w.NeighbourTop = 1, learned, nb, top
				scored, err := scoreAll(ranked, w)
				if err != nil {
					return err
				}
				for _, text := range textGrid {
					for _, tag := range tagGrid {
						for _, cause := range causes {
							for _, lead := range leadGrid {
								for _, nm := range namedGrid {
									w.Text, w.Tag, w.Cause, w.Lead, w.Named = text, tag, cause, lead, nm
									fs := pooled(scored, w)
									if o := objective(fs); o > bestObj+1e-9 {
										bestObj, best = o, w
										fmt.Printf("%.4f learned %.1f neighbour %.1f top %d text %.2f tag %.1f cause %.2f lead %.1f named %.2f  %s\n", o, learned, nb, top, text, tag, cause, lead, nm, showRanking(fs))
									}
								}
							}
						}
					}
				}
			}
		}
	}
	fmt.Printf("ranking fitted in %s\n", time.Since(start).Round(time.Second))
	// The gate: the threshold that keeps chatter silent 0.94 of the time
	// on the tuning set and answers the most, over a grid of what a
	// component, the learned model and a faint hint of trouble count.
	scored, err := scoreAll(all, best)
	if err != nil {
		return err
	}
	fmt.Println("gate: threshold, component weight -> answered (tuning/test, tuning/built-in, cv) and silence")
	reach := reachable(scored, best)
	bestAns := -1.0
	grid := gateGrid(best)
	if *gateModel {
		best = fitGateModel(scored, reach, best)
		grid = nil
	} else {
		best.GateModel = nil
	}
	for _, w := range grid {
		fs := gateFigures(scored, reach, w)
		sil := min(fs[0].silence, fs[1].silence)
		ans := (fs[0].answered + fs[1].answered + fs[2].answered) / 3
		// Remediation steps are weak negatives: they name the trouble
		// they fixed, and in an incident channel similar cases beside
		// them do little harm. They count a tenth.
		quiet := 0.9*sil + 0.1*fs[2].silence
		if *verbose && int(math.Round(w.Gate*100))%5 == 0 {
			fmt.Printf("  %s: answered %.3f %.3f %.3f silence %.3f, on remediation %.3f\n", gateString(w), fs[0].answered, fs[1].answered, fs[2].answered, sil, fs[2].silence)
		}
		if sil >= minSilence && ans+quiet > bestAns+1e-9 {
			bestAns = ans + quiet
			best = w
			fmt.Printf("  better: %s: answered %.3f %.3f %.3f silence %.3f %.3f, on remediation %.3f\n", gateString(w), fs[0].answered, fs[1].answered, fs[2].answered, fs[0].silence, fs[1].silence, fs[2].silence)
		}
	}
	fmt.Printf("gate chosen: %s\n", gateString(best))
	// The floor and the share of the best case's score a shown case needs:
	// the setting with the best F1 of hit@3 and the precision of what is
	// shown (a shown case that shares no tag with the query is noise).
	fmt.Println("floor, keep -> hit@3 and shown precision (tuning/test, tuning/built-in, cv)")
	bestF := -1.0
	for _, floor := range []float64{0.01, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4} {
		for _, keep := range []float64{0, 0.3, 0.5, 0.6, 0.7, 0.8} {
			w := best
			w.Floor, w.Keep = floor, keep
			fs := pooled(scored, w)
			var f1 float64
			for _, f := range fs {
				if f.hit3+f.shownP > 0 {
					f1 += 2 * f.hit3 * f.shownP / (f.hit3 + f.shownP) / float64(len(fs))
				}
			}
			fmt.Printf("  floor %.2f keep %.1f: hit@3 %.3f %.3f %.3f precision %.3f %.3f %.3f F1 %.4f\n", floor, keep,
				fs[0].hit3, fs[1].hit3, fs[2].hit3, fs[0].shownP, fs[1].shownP, fs[2].shownP, f1)
			// Among equal settings the highest floor: it changes nothing
			// on these queries and keeps weak cases out of a small library's
			// answers.
			if f1 > bestF-1e-9 {
				bestF = max(bestF, f1)
				best.Floor, best.Keep = floor, keep
			}
		}
	}
	fmt.Printf("fitted: %s\n", show(pooled(scored, best)))
	data, _ := json.MarshalIndent(best, "", "  ")
	fmt.Println(string(data))
	if write != "" {
		return os.WriteFile(write, append(data, '\n'), 0o644)
	}
	return nil
}

// The gate's grid of the trouble model's thresholds (0: off).
var (
	hushes  = []float64{0, 0.01, 0.03, 0.1}
	talks   = []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5}
	reports = []float64{0, 0.9, 0.95, 0.98, 0.99, 0.995}
)

// gateGrid is every setting of the gate the fit tries, the other weights
// as in w. Two rules are set, not fitted: a component named beside any sign
// of trouble counts in full (gate_both 1), and the gate is at most 0.75,
// what one taxonomy phrase of a symptom scores, so that an alert or a
// message that names its trouble is answered. Without them the tuning
// set's chatter that names components (review requests, upgrade plans,
// drills) pushes the gate above a phrase and silences real trouble. The
// gate is in exact hundredths: a phrase's trouble is 0.75 exactly, and
// the gate written to weights.json must be the one measured.
func gateGrid(w matcher.Weights) []matcher.Weights {
	var out []matcher.Weights
	for _, w.GateHint = range []float64{0, 0.3} {
		for _, w.GateHush = range hushes {
			for _, w.GateTalk = range talks {
				for _, w.GateReport = range reports {
					w.GateBoth = 1
					for _, w.GateLearned = range []float64{0, 0.6, 0.8, 1} {
						for _, w.GateComponent = range []float64{0.5, 0.6, 0.7, 0.8, 0.9, 1} {
							for gi := 30; gi <= 75; gi++ {
								w.Gate = float64(gi) / 100
								out = append(out, w)
							}
						}
					}
				}
			}
		}
	}
	return out
}

// gateString describes the gate of w.
func gateString(w matcher.Weights) string {
	return fmt.Sprintf("hush %.2f gate %.2f hint %.1f talk %.2f report %.2f both %.1f learned %.1f component %.1f",
		w.GateHush, w.Gate, w.GateHint, w.GateTalk, w.GateReport, w.GateBoth, w.GateLearned, w.GateComponent)
}

// minSilence is the least silence on the tuning set's chatter, in both
// libraries, that the gate may have.
var minSilence = 0.94

var gateModel = flag.Bool("gate-model", false, "with -weights: fit the answer gate as a logistic model over matcher.GateFeatures, not the rules' grid")

var named = flag.Bool("named", false, "with -weights: fit the named model and its weight, over a smaller grid of the other ranking weights (learned 1, neighbour 0)")

var verbose = flag.Bool("v", false, "with -weights: print every fifth gate setting tried")

// reachable reports, per set and query, whether the ranking shows any case
// once the gate lets the text through: the gate alone then decides.
func reachable(ss []scoredSet, w matcher.Weights) [][]bool {
	w.Gate = math.Inf(-1)
	out := make([][]bool, len(ss))
	for i, s := range ss {
		for _, sc := range s.scored {
			cands := slices.Clone(sc.Candidates)
			scores := w.Order(cands)
			out[i] = append(out[i], w.Answers(sc, cands, scores, 5, w.Floor) > 0)
		}
	}
	return out
}

// gateFigures are the answered and silence figures of pooled under the gate
// of w, without ranking again.
func gateFigures(ss []scoredSet, reach [][]bool, w matcher.Weights) []figures {
	return pool(ss, func(i int, s scoredSet) figures {
		var f figures
		var pos, chat float64
		for j, q := range s.queries {
			shown := reach[i][j] && w.Trouble(s.scored[j]) >= w.Gate
			if q.chatter {
				chat++
				if !shown {
					f.silence++
				}
				continue
			}
			pos++
			if shown {
				f.answered++
			}
		}
		f.share(pos, chat)
		return f
	})
}

// rocArea is the area under the ROC curve the trouble model's figures trace
// (false positives: talk read as trouble; true: reports read as trouble),
// by the trapezoid rule.
// With messages, of the built-in messages' figures.
func rocArea(fits []matcher.TroubleFit, messages bool) float64 {
	type point struct{ x, y float64 }
	pts := []point{{0, 0}, {1, 1}}
	for _, f := range fits {
		if messages {
			pts = append(pts, point{1 - f.MessageQuiet, f.MessageRecall})
			continue
		}
		pts = append(pts, point{1 - f.Quiet, f.Recall})
	}
	slices.SortFunc(pts, func(a, b point) int {
		if c := cmp.Compare(a.x, b.x); c != 0 {
			return c
		}
		return cmp.Compare(a.y, b.y)
	})
	var area float64
	for i := 1; i < len(pts); i++ {
		area += (pts[i].x - pts[i-1].x) * (pts[i].y + pts[i-1].y) / 2
	}
	return area
}

// The ranking fit's grid: the weights of the learned model's tags and of
// the neighbours' votes, then of text, tags and the best hit's lead.
var (
	learnedGrid   = []float64{0, 1}
	neighbourGrid = []float64{0, 0.5, 1}
	textGrid      = []float64{0.25, 0.5, 0.75, 1, 1.5}
	tagGrid       = []float64{1, 2, 3}
	leadGrid      = []float64{0, 0.1, 0.2, 0.4, 0.6, 0.8}
)
