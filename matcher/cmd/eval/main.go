// Command eval prints the match quality of incidentbot's matcher on the
// evaluation sets, beside a text-only baseline: the held-out sets against the
// built-in library, one by one and (with -set all) pooled, then the tuning
// set against the test library and the built-in library.
//
//	go run ./matcher/cmd/eval [-set heldout|heldout2|…|heldout129|tuning|all] [-queries FILE] [-library DIR] [-misses] [-unseen]
//
// -unseen measures the same queries as if the incidents they are about
// were not in the library (eval.RunUnseen): the held-out sets chosen
// (-set takes names joined by commas too), pooled, then (with -set tuning
// or all) the tuning case queries.
//
// -h lists every -set name. The held-out sets are frozen and reported in
// aggregate only: -misses, -debug and -tags work on the tuning set (or
// -queries FILE). The ranking's weights are fitted by
// go run ./matcher/cmd/fit -weights.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/matcher/eval"
)

const tuningPath = "matcher/testdata/eval/tuning.jsonl"

// casesPath is the tuning queries that are each about one built-in case
// (the ranking's weights are fitted on them too); -set tuning reports them
// against the built-in library after the tuning set.
const casesPath = "matcher/testdata/eval/tuning-cases.jsonl"

// heldoutPath is the file of the held-out set of that -set name (one of
// eval.HeldoutSets, in the order -set all reports them).
func heldoutPath(name string) string { return "matcher/testdata/eval/" + name + ".jsonl" }

// errHeldout is returned when a per-query view is asked of a held-out set.
var errHeldout = errors.New("the held-out sets are reported in aggregate only, so that nothing is tuned on them; -misses, -debug and -tags work on the tuning set (-set tuning) or on -queries FILE")

func main() {
	set := flag.String("set", "all", "which evaluation set to report: "+setNames()+" (held-out sets first)")
	queries := flag.String("queries", "", "evaluate this query file (JSON lines) instead of the sets, like the tuning set")
	library := flag.String("library", "matcher/testdata/library", "test library directory")
	misses := flag.Bool("misses", false, "list the queries each run missed (tuning set or -queries only)")
	scoring := flag.String("scoring", matcher.BM25, "bleve scoring model: bm25 or tf-idf")
	debug := flag.Bool("debug", false, "print every query's signals and top results with their score parts (-library DIR or builtin; tuning set or -queries only)")
	tags := flag.String("tags", "", "print the queries whose phrase-extracted tags miss gold tags (fn) or add wrong ones (fp) (tuning set or -queries only)")
	unseen := flag.Bool("unseen", false, "match each query about a built-in case with a library that leaves its case out, as for an incident the library has never seen: the held-out sets chosen by -set (names may be joined by commas), pooled, and with -set tuning or all the tuning case queries")
	flag.Parse()
	if *unseen {
		if *queries != "" || *misses || *debug || *tags != "" {
			fmt.Fprintln(os.Stderr, "eval: -unseen reports the held-out sets and the tuning case queries in aggregate; it takes only -set and -scoring")
			os.Exit(2)
		}
		if err := runUnseen(*set, *scoring); err != nil {
			fmt.Fprintln(os.Stderr, "eval:", err)
			os.Exit(1)
		}
		return
	}
	if err := dispatch(*set, *queries, *library, *scoring, *tags, *misses, *debug); err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(1)
	}
}

func dispatch(set, queries, library, scoring, tags string, misses, debug bool) error {
	if !heldoutSet(set) && set != "tuning" && set != "all" {
		return fmt.Errorf("-set %q: want %s", set, setNames())
	}
	perQuery := misses || debug || tags != ""
	if perQuery && queries != "" && isHeldout(queries) {
		return errHeldout
	}
	if perQuery && queries == "" {
		if heldoutSet(set) {
			return errHeldout
		}
		if !misses {
			queries = tuningPath
		}
	}
	switch {
	case tags != "":
		return runTags(queries, tags)
	case debug:
		return runDebug(queries, library)
	case queries != "":
		return runTuning("queries "+queries, queries, library, scoring, misses)
	}
	var got, base []eval.Metrics
	for i, name := range eval.HeldoutSets {
		if set != name && set != "all" {
			continue
		}
		if i > 0 && set == "all" {
			fmt.Println()
		}
		g, b, err := runHeldout(heldoutPath(name), scoring)
		if err != nil {
			return err
		}
		got, base = append(got, g), append(base, b)
	}
	if set == "all" {
		// What TestHeldoutFloors/pooled holds to the targets.
		fmt.Printf("\nall %d held-out sets, pooled\n", len(got))
		for _, run := range []struct {
			name string
			mt   eval.Metrics
		}{{"built-in library", eval.Pool(got)}, {"built-in library, baseline", eval.Pool(base)}} {
			fmt.Println(eval.Format(run.name, run.mt))
			fmt.Println(eval.FormatDetail(run.mt))
		}
	}
	if set == "tuning" || set == "all" {
		if set == "all" {
			fmt.Println()
		}
		if err := runTuning("tuning set "+tuningPath, tuningPath, library, scoring, misses); err != nil {
			return err
		}
		fmt.Println()
		return runBuiltin("tuning case queries", casesPath, scoring)
	}
	return nil
}

// load reads the queries, the test library and the built-in library.
func load(queries, library string) (qs []eval.Query, testLib, builtinLib *cases.Library, err error) {
	if qs, err = eval.Load(queries); err != nil {
		return nil, nil, nil, err
	}
	tax := cases.DefaultTaxonomy()
	test, err := cases.Load(library, tax)
	if err != nil {
		return nil, nil, nil, err
	}
	builtin, err := cases.Builtin(tax)
	if err != nil {
		return nil, nil, nil, err
	}
	testLib, _ = cases.NewLibrary(test)
	builtinLib, _ = cases.NewLibrary(builtin)
	return qs, testLib, builtinLib, nil
}

// heldoutSet reports whether name is the -set name of a held-out set.
func heldoutSet(name string) bool {
	return slices.Contains(eval.HeldoutSets, name)
}

// setNames lists the names -set takes: "heldout, heldout2, ..., tuning or
// all".
func setNames() string {
	var b strings.Builder
	for _, name := range eval.HeldoutSets {
		b.WriteString(name + ", ")
	}
	return b.String() + "tuning or all"
}

// isHeldout reports whether path names one of the frozen held-out sets.
func isHeldout(path string) bool {
	for _, name := range eval.HeldoutSets {
		if sameFile(path, heldoutPath(name)) {
			return true
		}
	}
	return false
}

// sameFile reports whether paths a and b name the same existing file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// runHeldout reports a held-out set against the built-in library, whose
// cases its labels refer to, in aggregate only.
func runHeldout(path, scoring string) (got, base eval.Metrics, err error) {
	return measureBuiltin("held-out set", path, scoring)
}

// runBuiltin reports the set at path against the built-in library, beside
// the text-only baseline, in aggregate, under the title.
func runBuiltin(title, path, scoring string) error {
	_, _, err := measureBuiltin(title, path, scoring)
	return err
}

// measureBuiltin is runBuiltin, and returns the figures of the matcher and
// of the baseline.
func measureBuiltin(title, path, scoring string) (got, base eval.Metrics, err error) {
	qs, err := eval.Load(path)
	if err != nil {
		return got, base, err
	}
	builtin, err := cases.Builtin(cases.DefaultTaxonomy())
	if err != nil {
		return got, base, err
	}
	lib, _ := cases.NewLibrary(builtin)
	fmt.Printf("%s %s: %d queries; built-in library %d cases; scoring %s\n", title, path, len(qs), lib.Len(), scoring)
	for _, run := range []struct {
		name string
		opts matcher.Options
	}{
		{"built-in library", matcher.Options{Scoring: scoring}},
		{"built-in library, baseline", matcher.Options{Scoring: scoring, Mode: matcher.TextOnly}},
	} {
		mt, err := measure(lib, run.opts, qs)
		if err != nil {
			return got, base, err
		}
		fmt.Println(eval.Format(run.name, mt))
		fmt.Println(eval.FormatDetail(mt))
		if run.opts.Mode == matcher.TextOnly {
			base = mt
		} else {
			got = mt
		}
	}
	return got, base, nil
}

// runTuning reports a query set against the test library and the built-in
// library.
func runTuning(title, queries, library, scoring string, misses bool) error {
	qs, testLib, builtinLib, err := load(queries, library)
	if err != nil {
		return err
	}
	fmt.Printf("%s: %d queries; test library %d cases; built-in library %d cases; scoring %s\n", title, len(qs), testLib.Len(), builtinLib.Len(), scoring)
	for _, run := range []struct {
		name string
		lib  *cases.Library
		opts matcher.Options
	}{
		{"test library", testLib, matcher.Options{Scoring: scoring}},
		{"test library, baseline", testLib, matcher.Options{Scoring: scoring, Mode: matcher.TextOnly}},
		{"built-in library", builtinLib, matcher.Options{Scoring: scoring}},
		{"built-in library, baseline", builtinLib, matcher.Options{Scoring: scoring, Mode: matcher.TextOnly}},
	} {
		mt, err := measure(run.lib, run.opts, qs)
		if err != nil {
			return err
		}
		fmt.Println(eval.Format(run.name, mt))
		fmt.Println(eval.FormatDetail(mt))
		if misses {
			fmt.Printf("  missed: %s\n  answered chatter: %s\n", strings.Join(mt.Misses, " "), strings.Join(mt.Noisy, " "))
		}
	}
	return nil
}

// runUnseen reports the held-out sets set names (pooled) and, for tuning
// or all, the tuning case queries, each query matched with its own case
// left out of the built-in library (eval.RunUnseen), beside the baseline
// matched the same way.
func runUnseen(set, scoring string) error {
	chosen := strings.Split(set, ",")
	for _, name := range chosen {
		if !heldoutSet(name) && name != "tuning" && name != "all" {
			return fmt.Errorf("-set %q: want %s, or held-out set names joined by commas", set, setNames())
		}
	}
	all := slices.Contains(chosen, "all")
	tuning := all || slices.Contains(chosen, "tuning")
	builtin, err := cases.Builtin(cases.DefaultTaxonomy())
	if err != nil {
		return err
	}
	lib, _ := cases.NewLibrary(builtin)
	type group struct {
		title string
		qs    []eval.Query
	}
	var groups []group
	var held []eval.Query
	var names []string
	for _, name := range eval.HeldoutSets {
		if !all && !slices.Contains(chosen, name) {
			continue
		}
		qs, err := eval.Load(heldoutPath(name))
		if err != nil {
			return err
		}
		held = append(held, qs...)
		names = append(names, name)
	}
	if len(names) > 0 {
		title := names[0]
		if len(names) > 1 {
			title = fmt.Sprintf("%d held-out sets (%s to %s), pooled", len(names), names[0], names[len(names)-1])
		}
		groups = append(groups, group{title, held})
	}
	if tuning {
		qs, err := eval.Load(casesPath)
		if err != nil {
			return err
		}
		groups = append(groups, group{"tuning case queries " + casesPath, qs})
	}
	for i, g := range groups {
		if i > 0 {
			fmt.Println()
		}
		fmt.Printf("%s: the queries about a built-in case, each matched with that case left out (%d parts of the %d cases), and the chatter\n", g.title, eval.UnseenFolds, lib.Len())
		for _, run := range []struct {
			name string
			opts matcher.Options
		}{
			{"own case left out", matcher.Options{Scoring: scoring}},
			{"own case left out, baseline", matcher.Options{Scoring: scoring, Mode: matcher.TextOnly}},
		} {
			mt, err := eval.RunUnseen(context.Background(), lib, run.opts, g.qs)
			if err != nil {
				return err
			}
			fmt.Println(eval.Format(run.name, mt))
			fmt.Println(eval.FormatDetail(mt))
		}
	}
	return nil
}

func measure(lib *cases.Library, opts matcher.Options, qs []eval.Query) (eval.Metrics, error) {
	m, err := matcher.New(lib, opts)
	if err != nil {
		return eval.Metrics{}, err
	}
	defer m.Close()
	return eval.Run(context.Background(), m, qs)
}

func runDebug(queries, library string) error {
	qs, err := eval.Load(queries)
	if err != nil {
		return err
	}
	var set *cases.Set
	if library == "builtin" {
		set, err = cases.Builtin(cases.DefaultTaxonomy())
	} else {
		set, err = cases.Load(library, cases.DefaultTaxonomy())
	}
	if err != nil {
		return err
	}
	lib, _ := cases.NewLibrary(set)
	m, err := matcher.New(lib, matcher.Options{})
	if err != nil {
		return err
	}
	defer m.Close()
	for _, q := range qs {
		ans, err := m.Rank(context.Background(), q.Text, 3)
		if err != nil {
			return err
		}
		shown, err := m.Match(context.Background(), q.Text, 3)
		if err != nil {
			return err
		}
		sc, err := m.Score(context.Background(), q.Text)
		if err != nil {
			return err
		}
		var sig []string
		for _, s := range ans.Symptoms {
			sig = append(sig, s.ID)
		}
		for _, s := range ans.Components {
			sig = append(sig, s.ID)
		}
		fmt.Printf("%s %s gold=%s/%v/%v sig=%v report=%.3f gate=%.3f answered=%d\n", q.ID, q.Kind, q.Case, q.Symptoms, q.Components, sig, sc.Report, matcher.DefaultWeights.Trouble(sc), len(shown.Results))
		for _, r := range ans.Results {
			fmt.Printf("    %s score %.3f tag %.3f text %.2f %v %v\n", r.Case.ID, r.Score, r.TagScore, r.TextScore, r.Case.Symptoms, r.Case.Components)
		}
	}
	return nil
}

// runTags lists where the taxonomy's phrases miss a gold tag (fn) or find a
// wrong one (fp), with the phrase that fired, for tuning cases/taxonomy.yaml.
func runTags(queries, mode string) error {
	if mode != "fn" && mode != "fp" {
		return fmt.Errorf("-tags takes fn or fp")
	}
	qs, err := eval.Load(queries)
	if err != nil {
		return err
	}
	ext := matcher.NewExtractor(cases.DefaultTaxonomy())
	count := map[string]int{}
	for _, q := range qs {
		want := slices.Concat(q.Symptoms, q.Components)
		got := map[string]string{}
		for _, s := range ext.Extract(q.Text) {
			if s.Kind == cases.KindSymptom || s.Kind == cases.KindComponent {
				got[s.ID] = s.Phrase
			}
		}
		var list []string
		if mode == "fn" {
			for _, w := range want {
				if _, ok := got[w]; !ok {
					list = append(list, w)
				}
			}
		} else {
			for g, p := range got {
				if !slices.Contains(want, g) {
					list = append(list, fmt.Sprintf("%s<%s>", g, p))
				}
			}
		}
		if len(list) == 0 {
			continue
		}
		slices.Sort(list)
		for _, l := range list {
			count[l]++
		}
		text := strings.Join(strings.Fields(q.Text), " ")
		if len(text) > 300 {
			text = text[:300]
		}
		fmt.Printf("%s %s %v\n    %s\n", q.ID, mode, list, text)
	}
	fmt.Printf("\n%d distinct\n", len(count))
	return nil
}
