package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/incidentbot/incidentbot/cases"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// libFlags are the flags that choose the case library.
type libFlags struct {
	paths   stringList
	builtin bool
}

func (l *libFlags) register(fs *flag.FlagSet, e env) {
	l.builtin = true
	if v := e.getenv("INCIDENTBOT_BUILTIN"); v != "" {
		if b, err := strconv.ParseBool(v); err == nil {
			l.builtin = b
		}
	}
	fs.Var(&l.paths, "cases", "load cases from this file or directory beside the built-in library (repeatable; env INCIDENTBOT_CASES, paths separated by "+string(os.PathListSeparator)+")")
	fs.BoolVar(&l.builtin, "builtin", l.builtin, "include the built-in library of public incidents (env INCIDENTBOT_BUILTIN)")
}

// load reads the library: the built-in cases first, then each path in order,
// a later case replacing an earlier one with the same id. Problems in case
// files are summed up on warn; only a path that cannot be read is an error.
func (l *libFlags) load(e env, warn io.Writer) (*cases.Library, error) {
	paths := l.paths
	if len(paths) == 0 {
		if v := e.getenv("INCIDENTBOT_CASES"); v != "" {
			paths = filepath.SplitList(v)
		}
	}
	tax := cases.DefaultTaxonomy()
	var sets []*cases.Set
	if l.builtin {
		b, err := cases.Builtin(tax)
		if err != nil {
			return nil, err
		}
		sets = append(sets, b)
	}
	for _, p := range paths {
		s, err := cases.Load(p, tax)
		if err != nil {
			return nil, fmt.Errorf("%w (check the path given to --cases)", err)
		}
		if n := s.Errors(); n > 0 {
			fmt.Fprintf(warn, "incidentbot: %d problem(s) in %s left some cases out; run: incidentbot cases validate %s\n", n, p, p)
		}
		sets = append(sets, s)
	}
	lib, overrides := cases.NewLibrary(sets...)
	for _, o := range overrides {
		fmt.Fprintf(warn, "incidentbot: case %s from %s replaces the one from %s\n", o.ID, o.By, o.Replaced)
	}
	if lib.Len() == 0 {
		return nil, fmt.Errorf("the case library is empty: pass --cases DIR or leave --builtin on")
	}
	return lib, nil
}

// parseInterspersed parses flags that may stand before, between or after
// the positional arguments, and returns the positional ones. Everything after
// "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// newFlagSet makes a flag set whose errors come back as usage errors.
func newFlagSet(name, synopsis string, e env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: incidentbot %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// flagError turns a flag parsing error into the command's result.
func flagError(err error) error {
	if err == flag.ErrHelp {
		return errHelp
	}
	return usageError{err.Error()}
}
