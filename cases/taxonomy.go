package cases

import (
	_ "embed"
	"fmt"
	"slices"
	"sync"

	"github.com/goccy/go-yaml"
)

// Kind is the kind of a tag: which list of a case it belongs in.
type Kind string

// The kinds of tags.
const (
	KindSymptom      Kind = "symptom"
	KindComponent    Kind = "component"
	KindRootCause    Kind = "root_cause"
	KindContributing Kind = "contributing"
)

// Field returns the case field that holds tags of this kind.
func (k Kind) Field() string {
	switch k {
	case KindSymptom:
		return "symptoms"
	case KindComponent:
		return "components"
	case KindRootCause:
		return "root_cause"
	}
	return "contributing"
}

// Phrases are the words that signal a tag in alerts, logs and chat.
type Phrases struct {
	En []string `yaml:"en"`
	Ko []string `yaml:"ko"`
}

// Tag is one id of the taxonomy with its labels, definition and signalling
// phrases.
type Tag struct {
	ID         string  `yaml:"id"`
	Kind       Kind    `yaml:"-"`
	Label      Text    `yaml:"label"`
	Definition Text    `yaml:"definition"`
	Phrases    Phrases `yaml:"phrases"`
}

// Taxonomy is the controlled vocabulary of case tags. The same id may exist
// in two kinds (limit-exceeded is a symptom and a root cause), so tags are
// looked up by kind.
type Taxonomy struct {
	Symptoms     []*Tag `yaml:"symptoms"`
	Components   []*Tag `yaml:"components"`
	RootCauses   []*Tag `yaml:"root_causes"`
	Contributing []*Tag `yaml:"contributing"`

	byKind map[Kind]map[string]*Tag
}

//go:embed taxonomy.yaml
var taxonomyYAML []byte

var defaultTaxonomy = sync.OnceValues(func() (*Taxonomy, error) { return ParseTaxonomy(taxonomyYAML) })

// DefaultTaxonomy returns the taxonomy embedded in the binary. It panics if
// the embedded file is broken, which the package's tests rule out.
func DefaultTaxonomy() *Taxonomy {
	t, err := defaultTaxonomy()
	if err != nil {
		panic(fmt.Sprintf("embedded taxonomy: %v", err))
	}
	return t
}

// ParseTaxonomy reads a taxonomy file.
func ParseTaxonomy(data []byte) (*Taxonomy, error) {
	var t Taxonomy
	if err := yaml.UnmarshalWithOptions(data, &t, yaml.DisallowUnknownField()); err != nil {
		return nil, fmt.Errorf("parse taxonomy: %w", err)
	}
	t.byKind = map[Kind]map[string]*Tag{}
	for kind, tags := range t.lists() {
		m := map[string]*Tag{}
		for _, tag := range tags {
			if tag.ID == "" {
				return nil, fmt.Errorf("parse taxonomy: a %s has no id", kind)
			}
			if _, dup := m[tag.ID]; dup {
				return nil, fmt.Errorf("parse taxonomy: %s %q is listed twice", kind, tag.ID)
			}
			if tag.Label.En == "" {
				tag.Label.En = tag.ID
			}
			tag.Kind = kind
			m[tag.ID] = tag
		}
		t.byKind[kind] = m
	}
	return &t, nil
}

func (t *Taxonomy) lists() map[Kind][]*Tag {
	return map[Kind][]*Tag{
		KindSymptom:      t.Symptoms,
		KindComponent:    t.Components,
		KindRootCause:    t.RootCauses,
		KindContributing: t.Contributing,
	}
}

// Tags returns the tags of one kind in the taxonomy's order.
func (t *Taxonomy) Tags(kind Kind) []*Tag { return t.lists()[kind] }

// Lookup returns the tag of the given kind and id.
func (t *Taxonomy) Lookup(kind Kind, id string) (*Tag, bool) {
	tag, ok := t.byKind[kind][id]
	return tag, ok
}

// Label returns the label of a tag in lang, or the id itself for a tag the
// taxonomy does not know (a team's own tag).
func (t *Taxonomy) Label(kind Kind, id string, lang Lang) string {
	if tag, ok := t.Lookup(kind, id); ok {
		return tag.Label.In(lang)
	}
	return id
}

// KindsOf returns the kinds that have a tag with this id.
func (t *Taxonomy) KindsOf(id string) []Kind {
	var kinds []Kind
	for _, k := range []Kind{KindSymptom, KindComponent, KindRootCause, KindContributing} {
		if _, ok := t.byKind[k][id]; ok {
			kinds = append(kinds, k)
		}
	}
	return slices.Clip(kinds)
}
