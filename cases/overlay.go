package cases

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
)

// overlayFile is a team's taxonomy overlay as written: its own symptoms and
// components (services, datastores), and phrases for existing ids.
type overlayFile struct {
	Symptoms   []overlayTag `json:"symptoms"`
	Components []overlayTag `json:"components"`
}

type overlayTag struct {
	ID         string         `json:"id"`
	Label      Text           `json:"label"`
	Definition Text           `json:"definition"`
	Phrases    overlayPhrases `json:"phrases"`
}

type overlayPhrases struct {
	En []string `json:"en"`
	Ko []string `json:"ko"`
}

var tagID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// LoadOverlay reads a team's taxonomy overlay (YAML or JSON) and merges it
// into base, returning a new taxonomy; base is not changed. The overlay may
// add symptoms and components, each with an id, English and Korean labels,
// a definition and the phrases that signal it, and may add phrases to ids
// base already has. It is checked like a case file: every problem, with
// line, column and field. The taxonomy is nil when any problem is an error.
func LoadOverlay(file string, data []byte, base *Taxonomy) (*Taxonomy, []Problem) {
	fail := func(msg string) (*Taxonomy, []Problem) {
		return nil, []Problem{{Severity: Error, File: file, Msg: msg}}
	}
	if !utf8.Valid(data) {
		return fail("file is not UTF-8 text: save it as UTF-8")
	}
	js := data
	var where positions
	switch strings.ToLower(path.Ext(file)) {
	case ".yaml", ".yml":
		var err error
		js, err = yamlToJSON(data)
		if err != nil {
			var ye yaml.Error
			if errors.As(err, &ye) && ye.GetToken() != nil {
				p := ye.GetToken().Position
				return nil, []Problem{{Severity: Error, File: file, Line: p.Line, Column: p.Column, Msg: "invalid YAML: " + ye.GetMessage()}}
			}
			return fail("invalid YAML: " + err.Error())
		}
		if ycs := yamlPositions(data); len(ycs) == 1 {
			where = ycs[0].pos
		}
	default:
		if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
			return nil, []Problem{jsonProblem(file, data, 0, err)}
		}
		where = jsonPositions(data, data, 0)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(js, &obj); err != nil || obj == nil {
		return fail(`an overlay is an object: {symptoms: [...], components: [...]}`)
	}
	d := &decoder{}
	var of overlayFile
	v := reflect.ValueOf(&of).Elem()
	for key, raw := range obj {
		fv, ok := fieldByTag(v, key)
		if !ok {
			switch key {
			case "root_causes", "contributing":
				d.add(Error, key, "an overlay adds symptoms and components; root causes and contributing factors stay the project's list")
			default:
				d.unknown(key, key, []string{"symptoms", "components"})
			}
			continue
		}
		d.value(key, raw, fv)
	}

	out := base.clone()
	for _, kl := range []struct {
		kind Kind
		tags []overlayTag
	}{{KindSymptom, of.Symptoms}, {KindComponent, of.Components}} {
		seen := map[string]int{}
		for i, ot := range kl.tags {
			at := fmt.Sprintf("%s[%d]", kl.kind.Field(), i)
			switch {
			case ot.ID == "":
				d.add(Error, at+".id", "missing: give the tag an id such as \"orders-db\"")
				continue
			case !tagID.MatchString(ot.ID):
				d.add(Error, at+".id", "%q: use lower-case letters, digits, '-', '_' and '.'", ot.ID)
				continue
			}
			if j, dup := seen[ot.ID]; dup {
				d.add(Error, at+".id", "%q is listed twice (also %s[%d])", ot.ID, kl.kind.Field(), j)
				continue
			}
			seen[ot.ID] = i
			phrases := slices.Concat(ot.Phrases.En, ot.Phrases.Ko)
			for j, p := range phrases {
				if strings.TrimSpace(p) == "" {
					d.add(Error, fmt.Sprintf("%s.phrases[%d]", at, j), "is empty")
				}
			}
			if existing, ok := out.Lookup(kl.kind, ot.ID); ok {
				// An existing id: the overlay adds phrases to it.
				if !ot.Label.Empty() || !ot.Definition.Empty() {
					d.add(Warning, at+".label", "%q is the taxonomy's own %s: its label and definition stay; only phrases are added", ot.ID, kl.kind)
				}
				if len(phrases) == 0 {
					d.add(Warning, at+".phrases", "%q is already in the taxonomy and the overlay adds no phrases to it", ot.ID)
				}
				t := *existing
				t.Phrases = Phrases{En: slices.Concat(existing.Phrases.En, ot.Phrases.En), Ko: slices.Concat(existing.Phrases.Ko, ot.Phrases.Ko)}
				out.replace(kl.kind, &t)
				continue
			}
			if other := out.KindsOf(ot.ID); len(other) > 0 {
				d.add(Warning, at+".id", "%q is also a %s id; cases must list it under the right field", ot.ID, other[0])
			}
			if ot.Label.Empty() {
				d.add(Warning, at+".label", "missing: the id %q is shown instead; write {en: ..., ko: ...}", ot.ID)
			}
			if len(phrases) == 0 {
				d.add(Warning, at+".phrases", "none: the matcher cannot find %q in alerts; add the names your alerts and chat use for it", ot.ID)
			}
			t := &Tag{ID: ot.ID, Kind: kl.kind, Label: ot.Label, Definition: ot.Definition, Phrases: Phrases{En: ot.Phrases.En, Ko: ot.Phrases.Ko}}
			if t.Label.En == "" && t.Label.Ko == "" {
				t.Label.En = t.ID
			}
			out.add(t)
		}
	}
	probs := d.probs
	bad := false
	for i := range probs {
		probs[i].File = file
		where.locate(&probs[i], pos{})
		bad = bad || probs[i].Severity == Error
	}
	slices.SortStableFunc(probs, func(a, b Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	if bad {
		return nil, probs
	}
	return out, probs
}

// clone copies a taxonomy so that an overlay can change the copy.
func (t *Taxonomy) clone() *Taxonomy {
	c := &Taxonomy{
		Symptoms:     slices.Clone(t.Symptoms),
		Components:   slices.Clone(t.Components),
		RootCauses:   slices.Clone(t.RootCauses),
		Contributing: slices.Clone(t.Contributing),
		byKind:       map[Kind]map[string]*Tag{},
	}
	for k, m := range t.byKind {
		c.byKind[k] = make(map[string]*Tag, len(m))
		for id, tag := range m {
			c.byKind[k][id] = tag
		}
	}
	return c
}

func (t *Taxonomy) list(kind Kind) *[]*Tag {
	switch kind {
	case KindSymptom:
		return &t.Symptoms
	case KindComponent:
		return &t.Components
	case KindRootCause:
		return &t.RootCauses
	}
	return &t.Contributing
}

func (t *Taxonomy) add(tag *Tag) {
	l := t.list(tag.Kind)
	*l = append(*l, tag)
	t.byKind[tag.Kind][tag.ID] = tag
}

// replace puts tag in place of the tag of the same kind and id.
func (t *Taxonomy) replace(kind Kind, tag *Tag) {
	l := t.list(kind)
	for i, old := range *l {
		if old.ID == tag.ID {
			(*l)[i] = tag
		}
	}
	t.byKind[kind][tag.ID] = tag
}
