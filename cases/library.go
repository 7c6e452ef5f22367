package cases

import (
	"cmp"
	"embed"
	"slices"
)

// Library is the merged set of cases the bot answers from.
type Library struct {
	cases  []*Case // sorted by id
	byID   map[string]*Case
	origin map[string]string // case id -> source name
}

// Override records that a later source replaced a case of an earlier one.
type Override struct {
	ID       string
	Replaced string // the source whose case was replaced
	By       string // the source that replaced it
}

// NewLibrary merges sets in order: a case in a later set replaces the case of
// an earlier set with the same id, and each replacement is reported.
func NewLibrary(sets ...*Set) (*Library, []Override) {
	l := &Library{byID: map[string]*Case{}, origin: map[string]string{}}
	var overrides []Override
	for _, s := range sets {
		for _, c := range s.Cases {
			if prev, ok := l.origin[c.ID]; ok {
				overrides = append(overrides, Override{ID: c.ID, Replaced: prev, By: s.Name})
			}
			l.byID[c.ID] = c
			l.origin[c.ID] = s.Name
		}
	}
	for _, c := range l.byID {
		l.cases = append(l.cases, c)
	}
	slices.SortFunc(l.cases, func(a, b *Case) int { return cmp.Compare(a.ID, b.ID) })
	return l, overrides
}

// Cases returns the library's cases sorted by id. The slice is shared: do not
// modify it.
func (l *Library) Cases() []*Case { return l.cases }

// Len returns the number of cases.
func (l *Library) Len() int { return len(l.cases) }

// Get returns the case with the given id.
func (l *Library) Get(id string) (*Case, bool) {
	c, ok := l.byID[id]
	return c, ok
}

// Filter returns a library of the cases keep accepts, each with its origin.
func (l *Library) Filter(keep func(*Case) bool) *Library {
	out := &Library{byID: map[string]*Case{}, origin: map[string]string{}}
	for _, c := range l.cases {
		if keep(c) {
			out.cases = append(out.cases, c)
			out.byID[c.ID] = c
			out.origin[c.ID] = l.origin[c.ID]
		}
	}
	return out
}

// Origin returns the name of the source a case came from.
func (l *Library) Origin(id string) string { return l.origin[id] }

//go:embed builtin
var builtinFS embed.FS

// BuiltinSource is the source name (Library.Origin) of the built-in cases.
const BuiltinSource = "builtin"

// Builtin returns the library of real public incidents embedded in the
// binary.
func Builtin(tax *Taxonomy) (*Set, error) {
	return LoadFS(builtinFS, "builtin", BuiltinSource, tax)
}
