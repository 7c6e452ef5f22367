package cases_test

import (
	"encoding/json"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
)

// TestMarshalYAMLRoundTrips writes every built-in case and the full test
// case as YAML and reads them back: nothing may change, and the file must
// load without a problem.
func TestMarshalYAMLRoundTrips(t *testing.T) {
	tax := cases.DefaultTaxonomy()
	set, err := cases.Builtin(tax)
	if err != nil {
		t.Fatal(err)
	}
	all := set.Cases
	for _, f := range []string{"testdata/full.json", "testdata/validate/korean.yaml"} {
		s, err := cases.Load(f, tax)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, s.Cases...)
	}
	tricky := &cases.Case{ID: "tricky", Title: cases.Text{En: "yes"}, Summary: cases.Text{En: "  leading space\nand: a colon\n\n# not a comment", Ko: "두 줄\n요약"},
		Date: "2024", RootCause: "null", Remediation: []cases.Step{{Text: cases.Text{En: "Line one\nline two"}}, {Text: cases.Text{Ko: "English only"}}, {Text: cases.PlainText("- dash"), Provenance: cases.Suggested}}}
	all = append(all, tricky)
	for _, c := range all {
		data := cases.MarshalYAML(c, cases.YAMLOptions{Header: []string{"a header", "on two lines"}, Notes: map[string]string{"symptoms[0]": "a note: with # marks", "title": "x"}})
		parsed, probs := cases.Parse(c.ID+".yaml", data)
		if len(probs) > 0 || len(parsed) != 1 {
			t.Fatalf("%s: problems %v\n%s", c.ID, probs, data)
		}
		for _, p := range parsed[0].Problems {
			if _, extra := c.Extra[p.Field]; extra {
				continue // a field the format may grow, kept and reported
			}
			t.Errorf("%s: %s\n%s", c.ID, p, data)
		}
		want, _ := json.Marshal(emptyLists(*c))
		got, _ := json.Marshal(emptyLists(*parsed[0].Case))
		if string(want) != string(got) {
			i := 0
			for i < min(len(want), len(got)) && want[i] == got[i] {
				i++
			}
			t.Fatalf("%s changed in YAML at byte %d:\nwant …%.200s\ngot  …%.200s\nYAML:\n%s", c.ID, i, want[i:], got[i:], data)
		}
	}
}

// emptyLists makes the lists a case file always has empty rather than
// absent: the two mean the same.
func emptyLists(c cases.Case) cases.Case {
	for _, l := range []*[]string{&c.Symptoms, &c.Components, &c.Contributing} {
		if *l == nil {
			*l = []string{}
		}
	}
	for _, l := range []*[]cases.Step{&c.Remediation, &c.ActionItems} {
		if *l == nil {
			*l = []cases.Step{}
		}
	}
	return c
}
