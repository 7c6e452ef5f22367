package cases

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// YAMLOptions shape a case written as YAML for a person to read and edit.
type YAMLOptions struct {
	// Header is written as comment lines at the top of the file.
	Header []string
	// Notes are comments written beside fields, by field path:
	// "symptoms[0]", "root_cause", "timeline.resolved_after".
	Notes map[string]string
}

// MarshalYAML writes a case as YAML in the format's field order, with text
// in one language as a plain string and the fields a reviewer is expected to
// fill in present even when empty. Reading the result with Parse gives the
// same case back.
func MarshalYAML(c *Case, opts YAMLOptions) []byte {
	w := &yamlWriter{notes: opts.Notes}
	for _, h := range opts.Header {
		w.comment(0, h)
	}
	w.scalar(0, "id", "id", c.ID)
	w.optScalar(0, "org", "org", c.Org)
	w.optScalar(0, "org_slug", "org_slug", c.OrgSlug)
	w.scalar(0, "date", "date", c.Date)
	w.optScalar(0, "date_kind", "date_kind", c.DateKind)
	w.optScalar(0, "severity", "severity", c.Severity)
	w.text(0, "title", "title", c.Title, true)
	w.list(0, "docs", c.Docs, false)
	w.list(0, "domain", c.Domain, false)
	w.text(0, "summary", "summary", c.Summary, true)
	w.text(0, "symptoms_text", "symptoms_text", c.SymptomsText, true)
	w.optScalar(0, "symptoms_text_kind", "symptoms_text_kind", c.SymptomsTextKind)
	w.text(0, "trigger", "trigger", c.Trigger, true)
	w.text(0, "detection", "detection", c.Detection, true)
	w.text(0, "lessons", "lessons", c.Lessons, false)
	w.list(0, "symptoms", c.Symptoms, true)
	w.list(0, "components", c.Components, true)
	w.scalar(0, "root_cause", "root_cause", c.RootCause)
	w.list(0, "contributing", c.Contributing, true)
	w.steps("remediation", c.Remediation)
	w.steps("action_items", c.ActionItems)
	if c.Impact != (Impact{}) {
		w.key(0, "impact", "impact")
		w.text(1, "impact.scope", "scope", c.Impact.Scope, true)
		w.text(1, "impact.users", "users", c.Impact.Users, true)
		w.text(1, "impact.region", "region", c.Impact.Region, true)
	}
	w.key(0, "timeline", "timeline")
	w.duration("timeline.detected_after", "detected_after", c.Timeline.DetectedAfter)
	w.duration("timeline.resolved_after", "resolved_after", c.Timeline.ResolvedAfter)
	if c.Related != nil && len(c.Related) == 0 {
		w.line(0, "related", "related: []")
	}
	if len(c.Related) > 0 {
		w.key(0, "related", "related")
		for i, r := range c.Related {
			p := fmt.Sprintf("related[%d]", i)
			w.item(0, p, "id", r.ID)
			w.scalar(1, p+".reason", "reason", r.Reason)
		}
	}
	if c.RecurrenceOf != nil {
		w.scalar(0, "recurrence_of", "recurrence_of", *c.RecurrenceOf)
	}
	if c.Sources != nil && len(c.Sources) == 0 {
		w.line(0, "sources", "sources: []")
	}
	if len(c.Sources) > 0 {
		w.key(0, "sources", "sources")
		for i, s := range c.Sources {
			p := fmt.Sprintf("sources[%d]", i)
			w.item(0, p, "url", s.URL)
			w.optScalar(1, p+".kind", "kind", s.Kind)
			if s.Archived != nil {
				w.scalar(1, p+".archived", "archived", *s.Archived)
			}
			w.optScalar(1, p+".report", "report", s.Report)
		}
	}
	w.key(0, "review", "review")
	w.scalar(1, "review.written_by", "written_by", c.Review.WrittenBy)
	w.nullable(1, "review.reviewed_at", "reviewed_at", c.Review.ReviewedAt)
	w.nullable(1, "review.reviewed_by", "reviewed_by", c.Review.ReviewedBy)
	w.optScalar(0, "updated_at", "updated_at", c.UpdatedAt)
	w.optScalar(0, "url", "url", c.URL)
	for _, k := range slices.Sorted(maps.Keys(c.Extra)) {
		if knownFields[k] {
			continue
		}
		// Fields this version does not know are kept as JSON, which YAML reads.
		var compact bytes.Buffer
		if json.Compact(&compact, c.Extra[k]) != nil {
			continue
		}
		w.line(0, k, quoteKey(k)+": "+compact.String())
	}
	return w.buf.Bytes()
}

type yamlWriter struct {
	buf   bytes.Buffer
	notes map[string]string
	// dash, when set, replaces the indentation of the next line: the "- "
	// that opens a list element whose first field that line writes.
	dash bool
}

func (w *yamlWriter) comment(indent int, s string) {
	for _, l := range strings.Split(s, "\n") {
		w.buf.WriteString(strings.Repeat("  ", indent))
		w.buf.WriteString(strings.TrimRight("# "+l, " "))
		w.buf.WriteByte('\n')
	}
}

// line writes one line, with the note of path as a trailing comment.
func (w *yamlWriter) line(indent int, path, s string) {
	w.indent(indent)
	w.buf.WriteString(s)
	if n := w.notes[path]; n != "" {
		w.buf.WriteString("  # ")
		w.buf.WriteString(strings.ReplaceAll(n, "\n", " "))
	}
	w.buf.WriteByte('\n')
}

func (w *yamlWriter) indent(indent int) {
	if w.dash {
		w.buf.WriteString(strings.Repeat("  ", indent-1) + "- ")
		w.dash = false
		return
	}
	w.buf.WriteString(strings.Repeat("  ", indent))
}

func (w *yamlWriter) key(indent int, path, name string) { w.line(indent, path, name+":") }

func (w *yamlWriter) scalar(indent int, path, name, v string) {
	if strings.Contains(v, "\n") {
		w.block(indent, path, name+":", v)
		return
	}
	w.line(indent, path, name+": "+yamlString(v))
}

func (w *yamlWriter) optScalar(indent int, path, name, v string) {
	if v != "" {
		w.scalar(indent, path, name, v)
	}
}

func (w *yamlWriter) nullable(indent int, path, name string, v *string) {
	if v == nil {
		w.line(indent, path, name+": null")
		return
	}
	w.scalar(indent, path, name, *v)
}

// item writes the first field of a list element at indent: "- name: value".
func (w *yamlWriter) item(indent int, path, name, v string) {
	w.dash = true
	w.scalar(indent+1, path, name, v)
}

func dropControl(s string) string {
	if !strings.ContainsFunc(s, isDroppedControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isDroppedControl(r) {
			return -1
		}
		return r
	}, s)
}

func isDroppedControl(r rune) bool {
	return unicode.IsControl(r) && r != '\n' && r != '\t' || r == '\uFEFF'
}

// block writes multi-line text as a literal block.
func (w *yamlWriter) block(indent int, path, head, v string) {
	v = dropControl(v)
	if strings.ContainsAny(v, "\r\t") || strings.TrimSpace(v) != v {
		w.line(indent, path, head+" "+jsonString(v))
		return
	}
	w.line(indent, path, head+" |-")
	pad := strings.Repeat("  ", indent+1)
	for _, l := range strings.Split(v, "\n") {
		l = strings.TrimRightFunc(l, unicode.IsSpace)
		if l != "" {
			w.buf.WriteString(pad)
			w.buf.WriteString(l)
		}
		w.buf.WriteByte('\n')
	}
}

func (w *yamlWriter) text(indent int, path, name string, t Text, always bool) {
	switch {
	case t.Empty() && !always:
	case t.Ko == "" && PlainText(t.En) == t, t.En == "" && PlainText(t.Ko) == t:
		w.scalar(indent, path, name, t.En+t.Ko)
	default:
		w.key(indent, path, name)
		w.scalar(indent+1, path+".en", "en", t.En)
		w.scalar(indent+1, path+".ko", "ko", t.Ko)
	}
}

func (w *yamlWriter) list(indent int, name string, vs []string, always bool) {
	if len(vs) == 0 {
		if always || vs != nil {
			w.line(indent, name, name+": []")
		}
		return
	}
	w.key(indent, name, name)
	for i, v := range vs {
		w.line(indent+1, fmt.Sprintf("%s[%d]", name, i), "- "+yamlString(v))
	}
}

func (w *yamlWriter) steps(name string, ss []Step) {
	if len(ss) == 0 {
		w.line(0, name, name+": []") // a reviewer may add steps here
		return
	}
	w.key(0, name, name)
	for i, s := range ss {
		p := fmt.Sprintf("%s[%d]", name, i)
		if s.Provenance == "" && s.Source == "" && (s.Text.En == "" || s.Text.Ko == "") {
			if t := s.Text.En + s.Text.Ko; !strings.Contains(t, "\n") && PlainText(t) == s.Text {
				w.line(1, p, "- "+yamlString(t))
				continue
			}
		}
		w.dash = true
		w.text(2, p+".text", "text", s.Text, true)
		w.optScalar(2, p+".provenance", "provenance", s.Provenance)
		w.optScalar(2, p+".source", "source", s.Source)
	}
}

func (w *yamlWriter) duration(path, name string, d *Duration) {
	if d == nil {
		w.line(1, path, name+": null")
		return
	}
	w.line(1, path, name+": "+yamlString(d.String()))
}

// yamlString writes a string as a plain YAML scalar when that reads back as
// the same string, and quoted otherwise. Control characters other than new
// lines and tabs say nothing in a case and YAML readers disagree on them, so
// they are left out.
func yamlString(s string) string {
	s = dropControl(s)
	if plainSafe(s) {
		return s
	}
	return jsonString(s)
}

func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func quoteKey(k string) string {
	if plainSafe(k) {
		return k
	}
	return jsonString(k)
}

// plainSafe reports whether s can be written as a plain YAML scalar: it
// starts with a letter, has no sequence YAML would read as structure or a
// comment, and is not a word YAML reads as a boolean or null.
func plainSafe(s string) bool {
	if s == "" || strings.TrimSpace(s) != s {
		return false
	}
	r := []rune(s)
	if !unicode.IsLetter(r[0]) {
		return false
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") {
		return false
	}
	for _, c := range s {
		if unicode.IsControl(c) || c == '\uFEFF' {
			return false
		}
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "true", "false", "on", "off", "null":
		return false
	}
	return true
}

// topKey matches a line that starts a top-level key of a YAML mapping.
var topKey = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_-]*|"[^"]*"|'[^']*')\s*:`)

// SetRelatedYAML rewrites the related field of a one-case YAML file in place
// and leaves every other line, comments included, as it was. A file without
// a related field gets one at its end.
func SetRelatedYAML(data []byte, rel []Related) []byte {
	w := &yamlWriter{}
	if len(rel) == 0 {
		w.line(0, "related", "related: []")
	} else {
		w.key(0, "related", "related")
		for i, r := range rel {
			p := fmt.Sprintf("related[%d]", i)
			w.item(0, p, "id", r.ID)
			w.scalar(1, p+".reason", "reason", r.Reason)
		}
	}
	block := w.buf.String()
	lines := strings.SplitAfter(string(data), "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "related:") || strings.HasPrefix(l, "related :") {
			start = i
			break
		}
	}
	if start < 0 {
		s := string(data)
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		return []byte(s + block)
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if topKey.MatchString(lines[i]) || strings.HasPrefix(lines[i], "---") || strings.HasPrefix(lines[i], "...") {
			end = i
			break
		}
	}
	// Comments and blank lines just above the next key belong to it.
	for end > start+1 {
		t := strings.TrimSpace(lines[end-1])
		if t != "" && !strings.HasPrefix(t, "#") {
			break
		}
		end--
	}
	var b strings.Builder
	for _, l := range lines[:start] {
		b.WriteString(l)
	}
	b.WriteString(block)
	for _, l := range lines[end:] {
		b.WriteString(l)
	}
	return []byte(b.String())
}
