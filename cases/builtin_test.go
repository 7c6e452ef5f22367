package cases_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
)

// TestBuiltinLibrary holds the built-in library to its promises: real cases
// that load cleanly, stable ids, sources, Korean text, and breadth.
func TestBuiltinLibrary(t *testing.T) {
	tax := cases.DefaultTaxonomy()
	set, err := cases.Builtin(tax)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range set.Problems {
		t.Errorf("problem: %s", p) // errors and unknown-tag warnings alike
	}
	if len(set.Cases) < 600 {
		t.Errorf("%d built-in cases, want at least 600", len(set.Cases))
	}
	entries, err := os.ReadDir("builtin")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, strings.TrimSuffix(e.Name(), ".json"))
	}
	lib, _ := cases.NewLibrary(set)
	orgs := map[string]bool{}
	korean, asian := 0, 0
	for _, c := range set.Cases {
		if want := "builtin/" + c.ID + ".json"; set.Files[c.ID] != want {
			t.Errorf("case %s lives in %s: the file name is the id", c.ID, set.Files[c.ID])
		}
		if len(c.Sources) == 0 || !strings.HasPrefix(c.Sources[0].URL, "http") {
			t.Errorf("case %s has no source URL", c.ID)
		}
		if c.Title.Ko == "" || c.Summary.Ko == "" || c.SymptomsText.Ko == "" {
			t.Errorf("case %s lacks Korean title, summary or symptoms text", c.ID)
		}
		if c.Review.WrittenBy != "generated" {
			t.Errorf("case %s: review.written_by is %q; built-in cases are \"generated\" from the public record", c.ID, c.Review.WrittenBy)
		}
		if (c.Review.ReviewedBy == nil) != (c.Review.ReviewedAt == nil) {
			t.Errorf("case %s: review names a reviewer without a date, or a date without a reviewer", c.ID)
		}
		if y := c.Date[:4]; y < "2008" || y > "2026" {
			t.Errorf("case %s is dated %s, outside 2008-2026", c.ID, c.Date)
		}
		if n := len(strings.Fields(c.Summary.En)); n < 120 || n > 300 {
			t.Errorf("case %s: summary of %d words, want 120 to 300", c.ID, n)
		}
		if n := len(strings.Fields(c.SymptomsText.En)); n < 60 || n > 200 {
			t.Errorf("case %s: symptoms text of %d words, want 60 to 200", c.ID, n)
		}
		if len(c.Symptoms) < 2 || len(c.Symptoms) > 6 || len(c.Components) < 1 || len(c.Components) > 4 || c.RootCause == "" ||
			len(c.Contributing) < 1 || len(c.Contributing) > 4 || len(c.Remediation) < 2 || len(c.Remediation) > 6 ||
			len(c.ActionItems) < 2 || len(c.ActionItems) > 6 {
			t.Errorf("case %s: tag, remediation or action item counts out of range", c.ID)
		}
		if len(c.Related) > 3 {
			t.Errorf("case %s has %d related cases", c.ID, len(c.Related))
		}
		for _, r := range c.Related {
			if _, ok := lib.Get(r.ID); !ok || r.ID == c.ID || r.Reason == "" {
				t.Errorf("case %s: related %q is not another library case with a reason", c.ID, r.ID)
			}
		}
		for name, part := range map[string]cases.Text{"scope": c.Impact.Scope, "users": c.Impact.Users, "region": c.Impact.Region} {
			if part.En != "" && part.Ko == "" {
				t.Errorf("case %s: impact.%s has no Korean, so show --lang ko prints it in English", c.ID, name)
			}
		}
		for _, issue := range cases.KoreanSpacingIssues(c) {
			t.Errorf("case %s: a particle stands apart from its word in %s (cases.NormalizeKoreanSpacing fixes it)", c.ID, issue)
		}
		orgs[strings.ToLower(c.Org)] = true
		if slices.Contains(c.Domain, "korea") {
			korean++
		}
		if slices.ContainsFunc(c.Domain, func(d string) bool { return eastAsia[d] }) {
			asian++
		}
	}
	if len(files) != len(set.Cases) {
		t.Errorf("%d files but %d cases: one case per file", len(files), len(set.Cases))
	}
	if len(orgs) < 200 {
		t.Errorf("%d organisations, want at least 200", len(orgs))
	}
	if korean < 60 {
		t.Errorf("%d Korean incidents, want at least 60", korean)
	}
	if asian < 40 {
		t.Errorf("%d incidents from Japan, China and Southeast Asia, want at least 40", asian)
	}
	st := cases.Stats(lib, tax)
	for kind, floor := range map[cases.Kind]int{cases.KindSymptom: 5, cases.KindComponent: 5, cases.KindRootCause: 10} {
		for _, tag := range tax.Tags(kind) {
			if n := st.PerTag[kind][tag.ID]; n < floor {
				t.Errorf("%s %s is carried by %d cases, want at least %d", kind, tag.ID, n, floor)
			}
		}
	}
}

// eastAsia are the domain keywords of incidents in Japan, China and
// Southeast Asia.
var eastAsia = map[string]bool{
	"japan": true, "china": true, "taiwan": true, "hong-kong": true, "singapore": true, "indonesia": true,
	"vietnam": true, "thailand": true, "malaysia": true, "philippines": true, "cambodia": true, "myanmar": true,
}

// TestBuiltinIDsStable pins the ids of the built-in library: a case may be
// added, but an id that users may have bookmarked never disappears.
func TestBuiltinIDsStable(t *testing.T) {
	want, err := os.ReadFile("testdata/builtin-ids.txt")
	if err != nil {
		t.Fatal(err)
	}
	set, err := cases.Builtin(cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, c := range set.Cases {
		have[c.ID] = true
	}
	for _, id := range strings.Fields(string(want)) {
		if !have[id] {
			t.Errorf("built-in case %s disappeared; keep ids stable (add testdata/builtin-ids.txt entries, never remove them)", id)
		}
	}
}
