// Package postmortem turns a team's incident write-ups into draft cases:
// Markdown postmortems in the shapes teams use (the Google SRE template,
// PagerDuty's, Atlassian's, YAML front matter, Korean headings, prose with no
// headings at all), HTML exports of Confluence and Google Docs pages, and
// Incident Library JSON as it is published.
//
// A draft has the text of the document in the case's fields and no tags:
// labelling a draft with taxonomy ids is the matcher's job, and the caller
// asks it. The package is pure: it reads bytes and returns cases.
package postmortem

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/incidentbot/incidentbot/cases"
)

// Format is the kind of document read.
type Format string

// The formats Read understands.
const (
	Auto     Format = "auto"
	Markdown Format = "markdown"
	HTML     Format = "html"
	Library  Format = "il" // Incident Library JSON, JSON lines or YAML cases
)

// ParseFormat reads a format name as given on the command line.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case Auto, Markdown, HTML, Library:
		return f, nil
	case "md":
		return Markdown, nil
	case "json", "jsonl":
		return Library, nil
	}
	return "", fmt.Errorf("unknown format %q: use auto, markdown, html or il", s)
}

// DetectFormat guesses a document's format from its name, then its first
// bytes.
func DetectFormat(name string, data []byte) Format {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".md", ".markdown", ".txt", ".text":
		return Markdown
	case ".html", ".htm", ".xhtml":
		return HTML
	case ".json", ".jsonl", ".ndjson", ".yaml", ".yml":
		return Library
	}
	head := bytes.TrimSpace(data[:min(len(data), 512)])
	switch {
	case bytes.HasPrefix(head, []byte("<")):
		return HTML
	case bytes.HasPrefix(head, []byte("{")) || bytes.HasPrefix(head, []byte("[")):
		return Library
	}
	return Markdown
}

// Draft is one case read from a document, with what the document gave and
// what it did not.
type Draft struct {
	Case   *cases.Case
	Format Format
	// Found lists the case fields the document filled, Missing those a
	// reviewer should look at because the document did not give them.
	Found, Missing []string
	// Unused lists the headings of the document that map to no field; their
	// text is still in Text.
	Unused []string
	// Services are the services a front matter names; the caller may turn
	// those the taxonomy knows into components.
	Services []string
	// Text is what the document says about the incident itself (title,
	// summary, symptoms, impact, detection, trigger and cause), for tag
	// inference.
	Text string
	// Tagged reports that the document already carried tags (an Incident
	// Library case).
	Tagged bool
	// Problems are what the Incident Library reader found wrong in the
	// case; empty for prose documents.
	Problems []cases.Problem
}

// MaxSize is the largest document Read accepts.
const MaxSize = 16 << 20

// Read turns one document into drafts: one for a postmortem, one per case
// for Incident Library files. name is the document's file name; it gives the
// case id and, when the document has none in its text, the date.
func Read(name string, data []byte, f Format) ([]*Draft, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s is larger than %d MiB", name, MaxSize>>20)
	}
	if f == "" || f == Auto {
		f = DetectFormat(name, data)
	}
	switch f {
	case Library:
		return readLibrary(name, data)
	case HTML:
		md, title, err := htmlToMarkdown(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		d := readMarkdown(name, md, title)
		d.Format = HTML
		return []*Draft{d}, nil
	case Markdown:
		d := readMarkdown(name, data, "")
		d.Format = Markdown
		return []*Draft{d}, nil
	}
	return nil, fmt.Errorf("unknown format %q", f)
}

// readLibrary reads Incident Library cases as published. They keep their
// tags; the caller infers only what a case lacks.
func readLibrary(name string, data []byte) ([]*Draft, error) {
	parseName := name
	if !cases.IsCaseFile(name) {
		parseName = name + ".json"
		if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' && bytes.Count(t, []byte("\n{")) > 0 {
			parseName = name + ".jsonl"
		}
	}
	parsed, probs := cases.Parse(parseName, data)
	if len(parsed) == 0 {
		if len(probs) > 0 {
			return nil, fmt.Errorf("%s", probs[0])
		}
		return nil, fmt.Errorf("%s has no cases", name)
	}
	var out []*Draft
	for _, p := range parsed {
		c := p.Case
		d := &Draft{Case: c, Format: Library, Problems: p.Problems}
		d.Tagged = len(c.Symptoms) > 0 || len(c.Components) > 0 || c.RootCause != ""
		if c.ID == "" && len(parsed) == 1 {
			c.ID = idFromName(name)
		}
		if c.Review.WrittenBy == "" {
			c.Review.WrittenBy = "import"
		}
		d.Text = joinText(c.Title, c.Summary, c.SymptomsText, c.Trigger, c.Detection)
		d.inventory()
		out = append(out, d)
	}
	return out, nil
}

func joinText(ts ...cases.Text) string {
	var parts []string
	for _, t := range ts {
		for _, s := range []string{t.En, t.Ko} {
			if strings.TrimSpace(s) != "" {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, "\n\n")
}

// inventory fills Found and Missing from the case.
func (d *Draft) inventory() {
	c := d.Case
	d.Found, d.Missing = nil, nil
	for _, f := range []struct {
		name string
		ok   bool
	}{
		{"title", !c.Title.Empty()},
		{"date", c.Date != ""},
		{"summary", !c.Summary.Empty()},
		{"symptoms_text", !c.SymptomsText.Empty()},
		{"impact", c.Impact != cases.Impact{}},
		{"trigger", !c.Trigger.Empty()},
		{"detection", !c.Detection.Empty()},
		{"remediation", len(c.Remediation) > 0},
		{"action_items", len(c.ActionItems) > 0},
		{"lessons", !c.Lessons.Empty()},
		{"timeline", c.Timeline.DetectedAfter != nil || c.Timeline.ResolvedAfter != nil},
	} {
		if f.ok {
			d.Found = append(d.Found, f.name)
		} else {
			d.Missing = append(d.Missing, f.name)
		}
	}
}

var idUnsafe = regexp.MustCompile(`[^\p{L}\p{N}._-]+`)

// idFromName makes a case id of a file name: its base without the
// extension, made safe by SafeID.
func idFromName(name string) string {
	base := filepath.Base(name)
	return SafeID(strings.TrimSuffix(base, filepath.Ext(base)))
}

// SafeID makes any string usable as a case id and file name: lower case,
// with runs of spaces, slashes and other characters ids may not have turned
// into single dashes.
func SafeID(s string) string {
	id := strings.Trim(idUnsafe.ReplaceAllString(s, "-"), "-.")
	id = strings.ToLower(id)
	if len(id) > 120 {
		id = strings.TrimRight(strings.ToValidUTF8(id[:120], ""), "-")
	}
	if id == "" {
		id = "postmortem"
	}
	return id
}
