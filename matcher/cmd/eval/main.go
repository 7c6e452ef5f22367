// Command eval prints the match quality of incidentbot's matcher on the
// evaluation set, beside a text-only baseline, against the test library and
// the built-in library.
//
//	go run ./matcher/cmd/eval [-queries FILE] [-library DIR] [-misses]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/matcher/eval"
)

func main() {
	queries := flag.String("queries", "matcher/testdata/eval/queries.jsonl", "evaluation queries (JSON lines)")
	library := flag.String("library", "matcher/testdata/library", "test library directory")
	misses := flag.Bool("misses", false, "list the queries each run missed")
	scoring := flag.String("scoring", matcher.BM25, "bleve scoring model: bm25 or tfidf")
	flag.Parse()
	if err := run(*queries, *library, *scoring, *misses); err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(1)
	}
}

func run(queries, library, scoring string, misses bool) error {
	qs, err := eval.Load(queries)
	if err != nil {
		return err
	}
	tax := cases.DefaultTaxonomy()
	test, err := cases.Load(library, tax)
	if err != nil {
		return err
	}
	builtin, err := cases.Builtin(tax)
	if err != nil {
		return err
	}
	testLib, _ := cases.NewLibrary(test)
	builtinLib, _ := cases.NewLibrary(builtin)
	fmt.Printf("%d queries; test library %d cases; built-in library %d cases; scoring %s\n", len(qs), testLib.Len(), builtinLib.Len(), scoring)
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
		m, err := matcher.New(run.lib, run.opts)
		if err != nil {
			return err
		}
		mt, err := eval.Run(context.Background(), m, qs)
		m.Close()
		if err != nil {
			return err
		}
		fmt.Println(eval.Format(run.name, mt))
		if misses {
			fmt.Printf("  missed: %s\n  answered chatter: %s\n", strings.Join(mt.Misses, " "), strings.Join(mt.Noisy, " "))
		}
	}
	return nil
}
