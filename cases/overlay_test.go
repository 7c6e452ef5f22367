package cases_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
)

func TestOverlayAddsTagsAndPhrases(t *testing.T) {
	data, err := os.ReadFile("testdata/overlay/team.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base := cases.DefaultTaxonomy()
	nBase := len(base.Tags(cases.KindComponent))
	tax, probs := cases.LoadOverlay("team.yaml", data, base)
	if tax == nil || len(probs) != 0 {
		t.Fatalf("overlay rejected: %v", probs)
	}
	tag, ok := tax.Lookup(cases.KindComponent, "orders-db")
	if !ok || tag.Label.Ko != "주문 DB" || tag.Definition.En == "" || !slices.Contains(tag.Phrases.En, "orders database") {
		t.Errorf("orders-db = %+v", tag)
	}
	if _, ok := tax.Lookup(cases.KindSymptom, "checkout-stuck"); !ok {
		t.Errorf("the overlay's symptom is missing")
	}
	rdb, _ := tax.Lookup(cases.KindComponent, "relational-database")
	if !slices.Contains(rdb.Phrases.En, "ledgerdb") || !slices.Contains(rdb.Phrases.En, "PostgreSQL") || rdb.Label.En != "Relational database" {
		t.Errorf("relational-database after the overlay: %+v", rdb)
	}
	if got := len(tax.Tags(cases.KindComponent)); got != nBase+1 {
		t.Errorf("%d components, want %d", got, nBase+1)
	}
	// The built-in taxonomy is left as it was.
	if _, ok := base.Lookup(cases.KindComponent, "orders-db"); ok || len(base.Tags(cases.KindComponent)) != nBase {
		t.Errorf("the overlay changed the built-in taxonomy")
	}
	if r, _ := base.Lookup(cases.KindComponent, "relational-database"); slices.Contains(r.Phrases.En, "ledgerdb") {
		t.Errorf("the overlay changed a built-in tag's phrases")
	}

	// A team case may use the new ids without a warning.
	c := &cases.Case{ID: "fh-1", Title: cases.Text{En: "x"}, Summary: cases.Text{En: "y"}, Date: "2025-01-27",
		Components: []string{"orders-db"}, Symptoms: []string{"checkout-stuck"}}
	if ps := cases.Validate(c, tax); len(ps) != 0 {
		t.Errorf("with the overlay: %v", ps)
	}
	if ps := cases.Validate(c, base); len(ps) != 2 {
		t.Errorf("without the overlay, want two unknown-tag warnings: %v", ps)
	}
}

func TestOverlayProblemsAreLocated(t *testing.T) {
	data, err := os.ReadFile("testdata/overlay/bad.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tax, probs := cases.LoadOverlay("bad.yaml", data, cases.DefaultTaxonomy())
	if tax != nil {
		t.Errorf("an overlay with errors was accepted")
	}
	var got []string
	for _, p := range probs {
		got = append(got, p.String())
	}
	for _, want := range []string{
		`bad.yaml:2:5: error: components[0].id: "Orders DB": use lower-case letters`,
		`bad.yaml:5:31: warning: components[1].label.kr: unknown field: did you mean "ko"?`,
		`bad.yaml:6:5: warning: components[1].phrase: unknown field: did you mean "phrases"?`,
		`bad.yaml:7:5: error: components[2].id: "payments-api" is listed twice`,
		`bad.yaml:8:1: error: root_causes: an overlay adds symptoms and components`,
	} {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, want) }) {
			t.Errorf("no problem starting\n  %s\nin:\n  %s", want, strings.Join(got, "\n  "))
		}
	}
}

func FuzzLoadOverlay(f *testing.F) {
	for _, name := range []string{"testdata/overlay/team.yaml", "testdata/overlay/bad.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(".yaml", data)
	}
	f.Add(".json", []byte(`{"components": [{"id": "a", "phrases": {"en": ["x"]}}], "symptoms": [{"id": "high-latency", "phrases": {"ko": ["느림"]}}]}`))
	f.Add(".yaml", []byte("components: &a [*a]\n"))
	base := cases.DefaultTaxonomy()
	nBase := len(base.Tags(cases.KindComponent))
	f.Fuzz(func(t *testing.T, ext string, data []byte) {
		if ext != ".json" {
			ext = ".yaml"
		}
		tax, probs := cases.LoadOverlay("fuzz"+ext, data, base)
		for _, p := range probs {
			if p.Msg == "" {
				t.Errorf("problem without a message: %+v", p)
			}
		}
		if tax != nil {
			if len(tax.Tags(cases.KindComponent)) < nBase {
				t.Errorf("the overlay lost components")
			}
			for _, tag := range tax.Tags(cases.KindComponent) {
				if got, ok := tax.Lookup(cases.KindComponent, tag.ID); !ok || got != tag {
					t.Errorf("component %q listed but not looked up", tag.ID)
				}
			}
		}
		if len(base.Tags(cases.KindComponent)) != nBase {
			t.Fatalf("the overlay changed the built-in taxonomy")
		}
	})
}
