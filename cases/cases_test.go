package cases_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/cases"
)

func TestRoundTripKeepsEveryField(t *testing.T) {
	data, err := os.ReadFile("testdata/full.json")
	if err != nil {
		t.Fatal(err)
	}
	var c cases.Case
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	if got := c.Timeline.ResolvedAfter.D; got != 62*time.Minute {
		t.Errorf("resolved_after = %v, want 1h2m", got)
	}
	if _, ok := c.Extra["future_field"]; !ok {
		t.Errorf("unknown field future_field not kept: %v", c.Extra)
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var want, got map[string]any
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		for k := range want {
			if !reflect.DeepEqual(got[k], want[k]) {
				t.Errorf("field %s: wrote %v, read %v", k, got[k], want[k])
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("field %s added on write: %v", k, got[k])
			}
		}
	}
}

// TestReferenceCasesRoundTrip loads cases in the Incident Library's
// reference format and checks that writing them back gives the same JSON:
// two invented cases of our own in testdata/reference, always, and the
// library's own reference cases when the shared folder is beside the
// repository.
func TestReferenceCasesRoundTrip(t *testing.T) {
	files, err := filepath.Glob("testdata/reference/*.json")
	if err != nil || len(files) < 2 {
		t.Fatalf("testdata/reference holds %d cases (%v), want 2", len(files), err)
	}
	shared, _ := filepath.Glob("../../shared/reference/*.json")
	for _, f := range append(files, shared...) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			set, err := cases.Load(f, cases.DefaultTaxonomy())
			if err != nil {
				t.Fatal(err)
			}
			if len(set.Cases) != 1 || set.Errors() != 0 {
				t.Fatalf("loaded %d cases, problems %v", len(set.Cases), set.Problems)
			}
			out, err := json.Marshal(set.Cases[0])
			if err != nil {
				t.Fatal(err)
			}
			var want, got map[string]any
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("written case: %v", err)
			}
			if len(want) < 20 {
				t.Fatalf("%s has %d fields: not a reference case", f, len(want))
			}
			for k := range want {
				if !reflect.DeepEqual(got[k], want[k]) {
					t.Errorf("field %s: wrote %v, read %v", k, got[k], want[k])
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("field %s added on write: %v", k, got[k])
				}
			}
		})
	}
}

func TestLoadDirectory(t *testing.T) {
	set, err := cases.Load("testdata/load", cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range set.Cases {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	wantIDs := []string{"load-arr-1", "load-line-1", "load-line-4", "load-one", "load-yaml-1", "load-yaml-2", "load-yaml-3"}
	if !slices.Equal(ids, wantIDs) {
		t.Errorf("loaded %v, want %v", ids, wantIDs)
	}

	// Each problem, as a user would read it, must name the file, the place,
	// the case and the field.
	wantProblems := []string{
		"testdata/load/array.json:3:24: error: case load-arr-2: title: missing",
		"testdata/load/array.json:4:66: error: case load-arr-3: symptoms: is a JSON string, want a list",
		"testdata/load/array.json:5:125: error: case load-arr-4: timeline.detected_after: \"3 hours\" is not a duration",
		"testdata/load/lines.jsonl:3:96: error: case load-line-2: date: date \"yesterday\" is not YYYY-MM-DD",
		"testdata/load/lines.jsonl:4:53: error: invalid JSON",
		"testdata/load/lines.jsonl:5:145: warning: case load-line-4: symptoms[1]: \"made-up-symptom\" is not in the taxonomy",
		"testdata/load/nested/broken.yaml:3:7: error: invalid YAML",
		"testdata/load/one.json:1:2: error: case load-one: id: duplicate id: also defined in testdata/load/nested/dup.json",
	}
	var got []string
	for _, p := range set.Problems {
		got = append(got, p.String())
	}
	for _, w := range wantProblems {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			t.Errorf("no problem starting %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
}

func TestLoadYAMLMatchesJSON(t *testing.T) {
	set, err := cases.Load("testdata/load/nested/hand.yaml", cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Cases) != 1 {
		t.Fatalf("got %d cases, problems %v", len(set.Cases), set.Problems)
	}
	c := set.Cases[0]
	if c.Date != "2025-02-14" {
		t.Errorf("date = %q: a YAML date must stay the text that was written", c.Date)
	}
	if c.Timeline.DetectedAfter == nil || c.Timeline.DetectedAfter.D != 12*time.Minute {
		t.Errorf("detected_after = %v", c.Timeline.DetectedAfter)
	}
	if !slices.Equal(c.Symptoms, []string{"tls-handshake-failures", "auth-failures"}) || c.RootCause != "expired-cert-or-credential" {
		t.Errorf("tags = %v %v", c.Symptoms, c.RootCause)
	}
}

func TestLaterSourceOverrides(t *testing.T) {
	tax := cases.DefaultTaxonomy()
	a, err := cases.Load("testdata/load/one.json", tax)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cases.Load("testdata/load/nested/dup.json", tax)
	if err != nil {
		t.Fatal(err)
	}
	lib, overrides := cases.NewLibrary(a, b)
	if len(overrides) != 1 || overrides[0].ID != "load-one" || overrides[0].Replaced != a.Name || overrides[0].By != b.Name {
		t.Fatalf("overrides = %+v", overrides)
	}
	c, _ := lib.Get("load-one")
	if c.Title.En != "Dup of one" {
		t.Errorf("the later source did not win: %q", c.Title.En)
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"7m", 7 * time.Minute, true},
		{"70h 34m", 70*time.Hour + 34*time.Minute, true},
		{"2d 3h", 51 * time.Hour, true},
		{"1h30m", 90 * time.Minute, true},
		{"45s", 45 * time.Second, true},
		{"", 0, false},
		{"3 hours", 0, false},
		{"10", 0, false},
		{"h", 0, false},
		{"5w", 0, false},
		{"99999999999h", 0, false},
	} {
		d, err := cases.ParseDuration(tc.in)
		if (err == nil) != tc.ok || (tc.ok && d.D != tc.want) {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v ok=%v", tc.in, d.D, err, tc.want, tc.ok)
		}
	}
}

// TestTaxonomyHasEveryID checks the embedded taxonomy against the list of tag
// ids that is the project's interface, and that every tag is fully written.
func TestTaxonomyHasEveryID(t *testing.T) {
	tax := cases.DefaultTaxonomy()
	f, err := os.Open("testdata/taxonomy-ids.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kinds := map[string]cases.Kind{"symptoms": cases.KindSymptom, "components": cases.KindComponent, "root_causes": cases.KindRootCause, "contributing": cases.KindContributing}
	want := map[cases.Kind]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kind, id, _ := strings.Cut(sc.Text(), " ")
		want[kinds[kind]]++
		tag, ok := tax.Lookup(kinds[kind], id)
		if !ok {
			t.Errorf("taxonomy lacks %s %s", kind, id)
			continue
		}
		if tag.Label.En == "" || tag.Label.Ko == "" || tag.Definition.En == "" || tag.Definition.Ko == "" {
			t.Errorf("%s %s: label or definition missing in en or ko", kind, id)
		}
		if kinds[kind] == cases.KindSymptom || kinds[kind] == cases.KindComponent {
			if len(tag.Phrases.En) < 3 || len(tag.Phrases.Ko) < 2 {
				t.Errorf("%s %s: only %d English and %d Korean phrases", kind, id, len(tag.Phrases.En), len(tag.Phrases.Ko))
			}
		}
	}
	for kind, n := range want {
		if got := len(tax.Tags(kind)); got != n {
			t.Errorf("taxonomy has %d %s tags, the interface lists %d", got, kind, n)
		}
	}
}

func TestParseTaxonomyRejectsDuplicates(t *testing.T) {
	_, err := cases.ParseTaxonomy([]byte("symptoms:\n  - id: a\n  - id: a\n"))
	if err == nil || !strings.Contains(err.Error(), `"a" is listed twice`) {
		t.Errorf("err = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/full.json", "testdata/load/array.json", "testdata/load/lines.jsonl", "testdata/load/nested/hand.yaml", "testdata/load/nested/broken.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(filepath.Ext(name), data)
	}
	f.Add(".json", []byte(`[{"id": 1}, {"timeline": {"detected_after": 5}}, null, [], "x"]`))
	f.Add(".yaml", []byte("- &a [*a]\n"))
	tax := cases.DefaultTaxonomy()
	f.Fuzz(func(t *testing.T, ext string, data []byte) {
		if !cases.IsCaseFile("x" + ext) {
			ext = ".json"
		}
		parsed, problems := cases.Parse("fuzz"+ext, data)
		for _, p := range parsed {
			cases.Validate(p.Case, tax)
			if _, err := json.Marshal(p.Case); err != nil {
				t.Errorf("a parsed case does not marshal: %v", err)
			}
			for _, pr := range p.Problems {
				if pr.Msg == "" || pr.Line == 0 {
					t.Errorf("case problem without message or line: %+v", pr)
				}
			}
		}
		for _, p := range problems {
			if p.Msg == "" || p.Severity != cases.Error {
				t.Errorf("problem without message or not an error: %+v", p)
			}
		}
	})
}

// TestValidationReportsEverythingOnce is the user's side of validation: one
// run names every problem of a file with its line, column, case and field,
// suggests the field that was meant, and reads plain strings as text.
func TestValidationReportsEverythingOnce(t *testing.T) {
	tax := cases.DefaultTaxonomy()
	set, err := cases.Load("testdata/validate", tax)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range set.Problems {
		got = append(got, p.String())
	}
	want := []string{
		`testdata/validate/many.yaml:7:3: warning: case ledger-2025-06-02: summary.kr: unknown field: did you mean "ko"?`,
		`testdata/validate/many.yaml:8:1: warning: case ledger-2025-06-02: symtoms_text: unknown field: did you mean "symptoms_text"?`,
		`testdata/validate/many.yaml:9:26: warning: case ledger-2025-06-02: symptoms[1]: "timeouts" is not in the taxonomy`,
		`testdata/validate/many.yaml:10:1: error: case ledger-2025-06-02: components: is a JSON string, want a list`,
		`testdata/validate/many.yaml:13:5: error: case ledger-2025-06-02: remediation[1].text: is a JSON number, want text`,
		`testdata/validate/many.yaml:16:3: error: case ledger-2025-06-02: timeline.detected_after: "9 minutes" is not a duration`,
		`testdata/validate/korean.yaml:5:1: warning: case 정산-2025-07-11: symptom: unknown field: did you mean "symptoms"?`,
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			t.Errorf("no problem starting\n  %s\nin:\n  %s", w, strings.Join(got, "\n  "))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d:\n  %s", len(got), len(want), strings.Join(got, "\n  "))
	}
	// The Korean case loads with no English at all: its plain-string title
	// and summary are Korean text.
	if len(set.Cases) != 1 {
		t.Fatalf("loaded %d cases, want the Korean one", len(set.Cases))
	}
	c := set.Cases[0]
	if c.Title.Ko == "" || c.Title.En != "" || c.Summary.Ko == "" {
		t.Errorf("plain Korean strings not read as Korean: title %+v summary %+v", c.Title, c.Summary)
	}
}

func TestPlainStringIsEnglishOrKorean(t *testing.T) {
	for in, want := range map[string]cases.Text{
		`"Disk full on db-3"`:           {En: "Disk full on db-3"},
		`"db-3 디스크가 가득 찼다"`:             {Ko: "db-3 디스크가 가득 찼다"},
		`{"en": "Disk full", "ko": ""}`: {En: "Disk full"},
	} {
		var got cases.Text
		if err := json.Unmarshal([]byte(in), &got); err != nil || got != want {
			t.Errorf("%s -> %+v, %v; want %+v", in, got, err, want)
		}
	}
}

func TestLoadSaysWhatItSkipped(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"ok.yaml":           "id: ok\ntitle: Fine\nsummary: A disk filled\ndate: 2024-01-01\n",
		"postmortem.md":     "# Disk filled\n",
		"export.html":       "<h1>Disk filled</h1>",
		"diagram.png":       "\x89PNG",
		".git/config":       "[core]",
		"nested/other.json": `{"id": "other", "title": "Other", "summary": "x", "date": "2024"}`,
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := cases.Load(dir, cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Cases) != 2 || len(set.Problems) != 0 {
		t.Errorf("cases %d, problems %v", len(set.Cases), set.Problems)
	}
	got := map[string]string{}
	for _, s := range set.Skipped {
		got[strings.TrimPrefix(s.File, dir+string(filepath.Separator))] = s.Reason
	}
	for file, reason := range map[string]string{
		"postmortem.md": "incidentbot cases import",
		"export.html":   "incidentbot cases import",
		"diagram.png":   "not a case file",
		".git":          "hidden directory",
	} {
		if !strings.Contains(got[file], reason) {
			t.Errorf("skip of %s: %q, want it to say %q (all: %v)", file, got[file], reason, got)
		}
	}
}
