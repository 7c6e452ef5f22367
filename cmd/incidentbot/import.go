package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/postmortem"
)

// importOptions are the settings of cases import.
type importOptions struct {
	Out    string            // directory the case files are written to
	Format postmortem.Format // auto, markdown, html or il
	Force  bool              // overwrite case files whose content changed
	Org    string            // organisation name for cases that do not give one
	Paths  []string          // documents, or directories of them
	Tax    *cases.Taxonomy
}

// documentExts are the endings import reads when it walks a directory.
var documentExts = []string{".md", ".markdown", ".txt", ".html", ".htm", ".json", ".jsonl", ".ndjson"}

// importOutcome is what became of one case.
type importOutcome string

const (
	outWritten     importOutcome = "written"
	outUnchanged   importOutcome = "unchanged"
	outChanged     importOutcome = "changed, not overwritten (use --force)"
	outOverwritten importOutcome = "changed, overwritten"
	outFailed      importOutcome = "failed"
)

// Tag limits for an imported case: a postmortem talks about many things, and
// a case is found by the few that define it.
const (
	maxImportSymptoms     = 4
	maxImportComponents   = 3
	maxImportContributing = 3
)

// importCases turns each document into a YAML case file in o.Out and reports,
// per document, what it found, what is missing and the file written. A
// document that cannot be read is reported and the rest go on; the error
// says how many failed.
func importCases(o importOptions, m *matcher.Matcher, w io.Writer) error {
	if len(o.Paths) == 0 {
		return usagef("cases import needs at least one document or directory, e.g. incidentbot cases import --out cases/ postmortems/")
	}
	docs, err := findDocuments(o.Paths)
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		return fmt.Errorf("no documents to import in %s (import reads %s)", strings.Join(o.Paths, ", "), strings.Join(documentExts, " "))
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return fmt.Errorf("create the output directory: %w", err)
	}
	counts := map[importOutcome]int{}
	written := map[string]string{} // case id -> document, in this run
	for _, doc := range docs {
		data, err := readDocument(doc)
		var drafts []*postmortem.Draft
		if err == nil {
			drafts, err = postmortem.Read(doc, data, o.Format)
		}
		if err != nil {
			fmt.Fprintf(w, "%s: %s: %v\n", doc, outFailed, err)
			counts[outFailed]++
			continue
		}
		for _, d := range drafts {
			out := importDraft(o, m, doc, d, written, w)
			counts[out]++
		}
	}
	var parts []string
	for _, oc := range []importOutcome{outWritten, outOverwritten, outUnchanged, outChanged, outFailed} {
		if n := counts[oc]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, oc))
		}
	}
	fmt.Fprintf(w, "\n%d documents: %s\n", len(docs), strings.Join(parts, ", "))
	if counts[outWritten]+counts[outOverwritten] > 0 {
		fmt.Fprintf(w, "Review the new files (the tags were inferred: comments say from what), then load them with --cases %s\n", o.Out)
	}
	if n := counts[outFailed]; n > 0 {
		return fmt.Errorf("%d of the cases could not be imported", n)
	}
	return nil
}

// importDraft labels one draft, writes it unless that would overwrite an
// edited file, and reports it.
func importDraft(o importOptions, m *matcher.Matcher, doc string, d *postmortem.Draft, written map[string]string, w io.Writer) importOutcome {
	c := d.Case
	if c.Org == "" {
		c.Org = o.Org
	}
	notes := map[string]string{}
	labelDraft(o.Tax, m, d, notes)
	file := filepath.Join(o.Out, c.ID+".yaml")
	fmt.Fprintf(w, "%s (%s)\n", doc, d.Format)
	if prev, dup := written[c.ID]; dup {
		fmt.Fprintf(w, "  %s: case %s was already written from %s in this run; give one of them an id in its front matter\n", outFailed, c.ID, prev)
		return outFailed
	}
	written[c.ID] = doc

	problems := slices.Concat(d.Problems, cases.Validate(c, o.Tax))
	fmt.Fprintf(w, "  found:   %s\n", orNone(d.Found))
	var missing []string
	missing = append(missing, d.Missing...)
	for _, t := range []struct {
		name string
		n    int
	}{{"symptoms", len(c.Symptoms)}, {"components", len(c.Components)}, {"root_cause", len(c.RootCause)}} {
		if t.n == 0 {
			missing = append(missing, t.name)
		}
	}
	fmt.Fprintf(w, "  missing: %s\n", orNone(missing))
	fmt.Fprintf(w, "  tags:    %s\n", describeTags(c))
	if len(d.Unused) > 0 {
		fmt.Fprintf(w, "  headings that name no field (their text is used as the summary only when there is no summary section): %s\n", strings.Join(d.Unused, "; "))
	}
	bad := false
	for _, p := range problems {
		p.File = file
		fmt.Fprintf(w, "  %s\n", p)
		bad = bad || p.Severity == cases.Error
	}
	if bad {
		fmt.Fprintf(w, "  %s: the case would not load; fix the document or import it and edit %s by hand\n", outFailed, file)
		return outFailed
	}

	header := []string{
		fmt.Sprintf("Imported from %s by incidentbot cases import.", doc),
		"Check the text and the tags (the comments say what each tag was inferred from),",
		"then set review.reviewed_by and review.reviewed_at. Remove these comments when done.",
	}
	data := cases.MarshalYAML(c, cases.YAMLOptions{Header: header, Notes: notes})
	outcome := outWritten
	if old, err := os.ReadFile(file); err == nil {
		switch {
		case bytes.Equal(old, data):
			outcome = outUnchanged
		case !o.Force:
			outcome = outChanged
		default:
			outcome = outOverwritten
		}
	}
	if outcome == outWritten || outcome == outOverwritten {
		if err := writeFileAtomic(file, data); err != nil {
			fmt.Fprintf(w, "  %s: %v\n", outFailed, err)
			return outFailed
		}
	}
	fmt.Fprintf(w, "  -> %s: %s\n", file, outcome)
	return outcome
}

// labelDraft gives a draft the tags the matcher infers from its text, and
// notes beside each tag the words it was inferred from. Services a front
// matter names become components when the taxonomy (or its overlay) has
// them. A case that came with tags (an Incident Library case) keeps them:
// only the kinds it has none of are inferred.
func labelDraft(tax *cases.Taxonomy, m *matcher.Matcher, d *postmortem.Draft, notes map[string]string) {
	c := d.Case
	if d.Tagged && len(c.Symptoms) > 0 && len(c.Components) > 0 && c.RootCause != "" {
		return
	}
	inf := m.Infer(d.Text)
	had := map[string]bool{"symptoms": len(c.Symptoms) > 0, "components": len(c.Components) > 0, "contributing": len(c.Contributing) > 0}
	note := func(path string, t matcher.Inferred) {
		ev := t.Evidence
		if len(ev) > 3 {
			ev = ev[:3]
		}
		quoted := make([]string, len(ev))
		for i, e := range ev {
			quoted[i] = fmt.Sprintf("%q", e)
		}
		notes[path] = fmt.Sprintf("inferred (%.2f) from %s", t.Score, strings.Join(quoted, ", "))
	}
	add := func(list *[]string, field string, tags []matcher.Inferred, max int) {
		if d.Tagged && had[field] {
			return
		}
		for _, t := range tags {
			if len(*list) >= max {
				return
			}
			if slices.Contains(*list, t.ID) {
				continue
			}
			note(fmt.Sprintf("%s[%d]", field, len(*list)), t)
			*list = append(*list, t.ID)
		}
	}
	for _, s := range d.Services {
		id := postmortem.SafeID(s)
		if _, ok := tax.Lookup(cases.KindComponent, id); ok && !slices.Contains(c.Components, id) {
			notes[fmt.Sprintf("components[%d]", len(c.Components))] = fmt.Sprintf("the front matter names service %q", s)
			c.Components = append(c.Components, id)
		}
	}
	add(&c.Symptoms, "symptoms", inf.Symptoms, maxImportSymptoms)
	add(&c.Components, "components", inf.Components, maxImportComponents)
	if c.RootCause == "" && len(inf.RootCauses) > 0 {
		c.RootCause = inf.RootCauses[0].ID
		note("root_cause", inf.RootCauses[0])
	}
	if !d.Tagged {
		add(&c.Contributing, "contributing", inf.Contributing, maxImportContributing)
	}
	if c.RootCause == "" {
		notes["root_cause"] = "none inferred: pick one (incidentbot cases stats lists the ids)"
	}
}

func describeTags(c *cases.Case) string {
	var parts []string
	if len(c.Symptoms) > 0 {
		parts = append(parts, "symptoms "+strings.Join(c.Symptoms, ", "))
	}
	if len(c.Components) > 0 {
		parts = append(parts, "components "+strings.Join(c.Components, ", "))
	}
	if c.RootCause != "" {
		parts = append(parts, "root cause "+c.RootCause)
	}
	if len(c.Contributing) > 0 {
		parts = append(parts, "contributing "+strings.Join(c.Contributing, ", "))
	}
	return orNone(parts)
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "(none)"
	}
	return strings.Join(ss, ", ")
}

// findDocuments expands directories into the documents below them, sorted,
// and keeps files named directly whatever their ending.
func findDocuments(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && strings.HasPrefix(d.Name(), ".") {
					return fs.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() && slices.Contains(documentExts, strings.ToLower(filepath.Ext(path))) {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
	}
	return out, nil
}

func readDocument(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, postmortem.MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > postmortem.MaxSize {
		return nil, fmt.Errorf("larger than %d MiB", postmortem.MaxSize>>20)
	}
	return data, nil
}

// writeFileAtomic writes a file through a temporary file and a rename, so an
// interrupted import never leaves half a case behind.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// casesImportCmd is "incidentbot cases import".
type casesImportCmd struct {
	taxFlags
	Out    string   `name:"out" default:"." placeholder:"DIR" help:"Directory to write the case files to, one ID.yaml per case."`
	Format string   `name:"format" default:"auto" enum:"auto,markdown,html,il" help:"Document format: auto (by file name and content), markdown, html or il (Incident Library JSON or JSON lines)."`
	Force  bool     `name:"force" help:"Overwrite a case file whose content would change (it may hold a reviewer's edits)."`
	Org    string   `name:"org" placeholder:"NAME" help:"Organisation name for cases whose document does not give one."`
	Paths  []string `arg:"" name:"path" help:"Postmortem documents, or directories of them."`
}

func (c *casesImportCmd) Run(e env) error {
	f, err := postmortem.ParseFormat(c.Format)
	if err != nil {
		return usagef("--format: %v", err)
	}
	tax, err := c.taxonomy(e.stderr)
	if err != nil {
		return err
	}
	b, err := builtinCases(tax)
	if err != nil {
		return err
	}
	lib, _ := cases.NewLibrary(b)
	m, err := newMatcher(lib, matcher.Options{Taxonomy: tax})
	if err != nil {
		return err
	}
	defer m.Close()
	return importCases(importOptions{Out: c.Out, Format: f, Force: c.Force, Org: c.Org, Paths: c.Paths, Tax: tax}, m, e.stdout)
}
