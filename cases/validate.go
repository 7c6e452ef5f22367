package cases

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Validate checks one case against the format and the taxonomy. Problems of
// severity Error keep the case out of the library; warnings (such as a tag
// the taxonomy does not know, which stays searchable as text) do not. File
// and line are left for the caller to fill in.
func Validate(c *Case, tax *Taxonomy) []Problem {
	var ps []Problem
	add := func(sev Severity, field, format string, args ...any) {
		ps = append(ps, Problem{Severity: sev, CaseID: c.ID, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	switch {
	case strings.TrimSpace(c.ID) == "":
		add(Error, "id", `missing: give the case a unique id such as "acme-2024-03-01"`)
	case strings.IndexFunc(c.ID, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '/' }) >= 0:
		add(Error, "id", "%q has spaces, slashes or control characters: use letters, digits, '-', '_' and '.'", c.ID)
	case len(c.ID) > 128:
		add(Error, "id", "is longer than 128 characters")
	}
	if c.Title.Empty() {
		add(Error, "title", `missing: write a title in "en" or "ko"`)
	}
	if c.Summary.Empty() && c.SymptomsText.Empty() && c.Trigger.Empty() {
		add(Error, "symptoms_text", "no text to match on: write symptoms_text, summary or trigger in en or ko")
	}
	if c.Date == "" {
		add(Warning, "date", "missing: digests and since: filters cannot place this case; write YYYY-MM-DD")
	} else if _, err := ParseDate(c.Date); err != nil {
		add(Error, "date", "%v", err)
	}
	for name, d := range map[string]*Duration{"timeline.detected_after": c.Timeline.DetectedAfter, "timeline.resolved_after": c.Timeline.ResolvedAfter} {
		if d != nil && d.Err != nil {
			add(Error, name, "%v: write it like \"7m\", \"2h 15m\" or \"3d 4h\", or null when unknown", d.Err)
		}
	}
	if tax != nil {
		checkTags(tax, KindSymptom, c.Symptoms, add)
		checkTags(tax, KindComponent, c.Components, add)
		if c.RootCause != "" {
			checkTags(tax, KindRootCause, []string{c.RootCause}, add)
		}
		checkTags(tax, KindContributing, c.Contributing, add)
	}
	for _, list := range []struct {
		name  string
		steps []Step
	}{{"remediation", c.Remediation}, {"action_items", c.ActionItems}} {
		for i, s := range list.steps {
			if s.Text.Empty() {
				add(Warning, fmt.Sprintf("%s[%d].text", list.name, i), "is empty: write what was done in en or ko, or remove the step")
			}
			if s.Provenance != "" && s.Provenance != Stated && s.Provenance != Suggested {
				add(Error, fmt.Sprintf("%s[%d].provenance", list.name, i), "%q: write %q (the organisation said it) or %q (the writer's own reading)", s.Provenance, Stated, Suggested)
			}
		}
	}
	switch c.SymptomsTextKind {
	case "", SymptomsReported, SymptomsReconstructed:
	default:
		add(Error, "symptoms_text_kind", "%q: write %q or %q", c.SymptomsTextKind, SymptomsReported, SymptomsReconstructed)
	}
	for i, s := range c.Sources {
		if s.Kind != "" && !slices.Contains(SourceKinds, s.Kind) {
			add(Warning, fmt.Sprintf("sources[%d].kind", i), "%q is not a known kind: use one of %s", s.Kind, strings.Join(SourceKinds, ", "))
		}
		if s.Report != "" && s.Report != ReportFinal && s.Report != ReportPreliminary {
			add(Error, fmt.Sprintf("sources[%d].report", i), "%q: write %q or %q", s.Report, ReportFinal, ReportPreliminary)
		}
	}
	return ps
}

func checkTags(tax *Taxonomy, kind Kind, ids []string, add func(Severity, string, string, ...any)) {
	seen := map[string]bool{}
	for i, id := range ids {
		field := kind.Field()
		if kind != KindRootCause {
			field = fmt.Sprintf("%s[%d]", field, i)
		}
		if seen[id] {
			add(Warning, field, "%q is listed twice", id)
			continue
		}
		seen[id] = true
		if _, ok := tax.Lookup(kind, id); ok {
			continue
		}
		if kinds := tax.KindsOf(id); len(kinds) > 0 {
			add(Warning, field, "%q is a %s id, not a %s: move it to %s", id, kinds[0], kind, kinds[0].Field())
			continue
		}
		add(Warning, field, "%q is not in the taxonomy: it stays searchable as text; use a taxonomy id if one fits (incidentbot cases stats lists them)", id)
	}
}
