package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// taxFlags choose the taxonomy: the built-in one, merged with a team's
// overlay when one is given.
type taxFlags struct {
	TaxonomyFile string `name:"taxonomy" placeholder:"FILE" env:"INCIDENTBOT_TAXONOMY" help:"A team taxonomy overlay (YAML or JSON) that adds your own components and symptoms, or phrases for existing ids."`

	loaded *cases.Taxonomy `kong:"-"`
}

// taxonomy returns the taxonomy to use, reading the overlay once. Warnings
// in the overlay are printed on warn; errors stop the command, all of them
// listed.
func (t *taxFlags) taxonomy(warn io.Writer) (*cases.Taxonomy, error) {
	if t.loaded != nil {
		return t.loaded, nil
	}
	if t.TaxonomyFile == "" {
		t.loaded = cases.DefaultTaxonomy()
		return t.loaded, nil
	}
	data, err := os.ReadFile(t.TaxonomyFile)
	if err != nil {
		return nil, fmt.Errorf("read the taxonomy overlay: %w (check --taxonomy or INCIDENTBOT_TAXONOMY)", err)
	}
	tax, probs := cases.LoadOverlay(t.TaxonomyFile, data, cases.DefaultTaxonomy())
	var errs []string
	for _, p := range probs {
		if p.Severity == cases.Error {
			errs = append(errs, p.String())
		} else {
			fmt.Fprintf(warn, "incidentbot: %s\n", p)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("the taxonomy overlay has %d error(s):\n  %s", len(errs), strings.Join(errs, "\n  "))
	}
	t.loaded = tax
	return tax, nil
}

// tax returns the taxonomy once it is loaded, else the built-in one.
func (t *taxFlags) tax() *cases.Taxonomy {
	if t.loaded != nil {
		return t.loaded
	}
	return cases.DefaultTaxonomy()
}

// libFlags are the flags that choose the case library.
type libFlags struct {
	taxFlags
	Cases   []string `name:"cases" placeholder:"PATH" sep:":" env:"INCIDENTBOT_CASES" help:"Load cases from this file or directory beside the built-in library (repeatable; in the environment, paths separated by :)."`
	Builtin bool     `name:"builtin" default:"true" negatable:"" env:"INCIDENTBOT_BUILTIN" help:"Include the built-in library of public incidents (--builtin=false or --no-builtin leaves it out)."`
}

// load reads the library: the built-in cases first, then each path in order,
// a later case replacing an earlier one with the same id. Problems in case
// files are summed up on warn; only a path that cannot be read is an error.
func (l *libFlags) load(warn io.Writer) (*cases.Library, error) {
	return l.loadContext(context.Background(), warn)
}

// loadContext is load that stops when ctx ends (SIGINT, SIGTERM).
func (l *libFlags) loadContext(ctx context.Context, warn io.Writer) (*cases.Library, error) {
	lib, _, err := l.loadChecked(ctx, warn)
	return lib, err
}

// loadChecked is loadContext that also returns the problems of severity
// error in the case files (each left a case or a whole file out).
func (l *libFlags) loadChecked(ctx context.Context, warn io.Writer) (*cases.Library, []cases.Problem, error) {
	sets, problems, err := l.loadSets(ctx, warn)
	if err != nil {
		return nil, problems, err
	}
	lib, err := mergeSets(sets, warn)
	return lib, problems, err
}

// mergeSets merges the sets loadSets read, later ones replacing the cases
// of earlier ones with the same id, each replacement said on warn.
func mergeSets(sets []*cases.Set, warn io.Writer) (*cases.Library, error) {
	lib, overrides := cases.NewLibrary(sets...)
	for _, o := range overrides {
		fmt.Fprintf(warn, "incidentbot: case %s from %s replaces the one from %s\n", o.ID, o.By, o.Replaced)
	}
	if lib.Len() == 0 {
		return nil, fmt.Errorf("the case library is empty: pass --cases DIR or leave --builtin on")
	}
	return lib, nil
}

// loadSets reads the built-in cases and each path of --cases, in order,
// with the problems of severity error in the case files.
func (l *libFlags) loadSets(ctx context.Context, warn io.Writer) ([]*cases.Set, []cases.Problem, error) {
	var problems []cases.Problem
	paths := l.Cases
	tax, err := l.taxonomy(warn)
	if err != nil {
		return nil, problems, err
	}
	var sets []*cases.Set
	if l.Builtin {
		b, err := builtinCases(tax)
		if err != nil {
			return nil, problems, err
		}
		sets = append(sets, b)
	}
	for _, p := range paths {
		s, err := cases.LoadContext(ctx, p, tax)
		if ctx.Err() != nil {
			return nil, problems, err
		}
		if err != nil {
			return nil, problems, fmt.Errorf("%w (check the path given to --cases)", err)
		}
		for _, pr := range s.Problems {
			if pr.Severity == cases.Error {
				problems = append(problems, pr)
			}
		}
		if n := s.Errors(); n > 0 {
			fmt.Fprintf(warn, "incidentbot: %s in %s left some cases out; run: incidentbot cases validate %s\n", plural(n, "problem"), p, p)
		}
		sets = append(sets, s)
	}
	return sets, problems, nil
}

// builtinCases returns the built-in cases read with tax. They are embedded
// in the program and never change, so with the built-in taxonomy they are
// read once per process, and reloads and later commands reuse them; an
// overlay's taxonomy reads them afresh. The set is shared: do not modify it
// or its cases.
func builtinCases(tax *cases.Taxonomy) (*cases.Set, error) {
	if tax == cases.DefaultTaxonomy() {
		return defaultBuiltin()
	}
	return cases.Builtin(tax)
}

var defaultBuiltin = sync.OnceValues(func() (*cases.Set, error) { return cases.Builtin(cases.DefaultTaxonomy()) })

// newMatcher indexes a library for match, cases import and run. It is a
// variable so that the tests can have every command that indexes the
// built-in library alone reopen one index of it kept on disk, as
// --index-dir does, rather than build it again for each.
var newMatcher = matcher.New
