// Package cases is incidentbot's domain: past incidents in the Incident
// Library format, the tag taxonomy they are labelled with, and the library
// that loads, validates and merges them from files.
//
// It imports nothing else of incidentbot's; the matcher, the bot and the
// digest build on it.
package cases

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Lang is a language of case text.
type Lang string

// The languages a case is written in.
const (
	English Lang = "en"
	Korean  Lang = "ko"
)

// Text is a piece of human-readable text in English and Korean. Either may be
// empty.
type Text struct {
	En string `json:"en"`
	Ko string `json:"ko"`
}

// In returns the text in lang, falling back to the other language when it is
// empty.
func (t Text) In(lang Lang) string {
	if lang == Korean {
		if t.Ko != "" {
			return t.Ko
		}
		return t.En
	}
	if t.En != "" {
		return t.En
	}
	return t.Ko
}

// Empty reports whether the text has no words in either language.
func (t Text) Empty() bool {
	return strings.TrimSpace(t.En) == "" && strings.TrimSpace(t.Ko) == ""
}

// Step is one remediation step or action item.
type Step struct {
	Text Text `json:"text"`
	// Provenance says whose the step is: Stated when the organisation said
	// it did (or committed to do) it, Suggested when it is the case writer's
	// own reading of what would help. Empty means the case's author is the
	// organisation itself, as in a team's own case, and counts as stated.
	Provenance string `json:"provenance,omitempty"`
	// Source is the document that states the step, when it is not the
	// case's first source.
	Source string `json:"source,omitempty"`
}

// Provenance values of a Step.
const (
	Stated    = "stated"
	Suggested = "suggested"
)

// IsStated reports whether the organisation itself stated the step.
func (s Step) IsStated() bool { return s.Provenance != Suggested }

// Source kinds. The organisation's own words come first; the rest are
// written by others about it.
var SourceKinds = []string{
	"official-postmortem", "official-status", "official-blog", "official-filing",
	"government-report", "regulator", "news", "talk", "third-party-analysis", "personal-blog", "issue-tracker",
}

// Report values of a Source: whether it is the final account of the
// incident or an early one that a later report may correct.
const (
	ReportFinal       = "final"
	ReportPreliminary = "preliminary"
)

// Symptoms-text kinds: Reported when the write-up itself describes what
// responders and users saw, Reconstructed when the case writer pieced it
// together from the write-up's facts.
const (
	SymptomsReported      = "reported"
	SymptomsReconstructed = "reconstructed"
)

// Impact says who and what an incident affected, in the words of its write-up.
// The format writes each part as a plain English string; a case may give
// {"en", "ko"} instead, and a plain string with Hangul is Korean.
type Impact struct {
	Scope  Text `json:"scope"`
	Users  Text `json:"users"`
	Region Text `json:"region"`
}

// MarshalJSON writes a part that has no Korean as the format's plain string,
// so that cases read from the format are written back as they were.
func (im Impact) MarshalJSON() ([]byte, error) {
	part := func(t Text) any {
		if t.Ko == "" {
			return t.En
		}
		return t
	}
	return json.Marshal(struct {
		Scope  any `json:"scope"`
		Users  any `json:"users"`
		Region any `json:"region"`
	}{part(im.Scope), part(im.Users), part(im.Region)})
}

// Review records who wrote a case and whether someone has checked it.
type Review struct {
	WrittenBy  string  `json:"written_by"`
	ReviewedAt *string `json:"reviewed_at"`
	ReviewedBy *string `json:"reviewed_by"`
}

// Source is a public document a case is drawn from.
type Source struct {
	URL      string  `json:"url"`
	Kind     string  `json:"kind"`
	Archived *string `json:"archived"`
	// Report is ReportFinal or ReportPreliminary where that is known.
	Report string `json:"report,omitempty"`
}

// Related links a case to another case of the library, with the reason.
type Related struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Timeline holds how long an incident took to detect and to resolve.
type Timeline struct {
	DetectedAfter *Duration `json:"detected_after"`
	ResolvedAfter *Duration `json:"resolved_after"`
}

// Case is one past incident in the Incident Library format. Every field of the
// format has a typed field here; fields the format may grow are kept in Extra
// so that loading a case and writing it back loses nothing.
type Case struct {
	ID           string   `json:"id"`
	Org          string   `json:"org"`
	OrgSlug      string   `json:"org_slug,omitempty"`
	Date         string   `json:"date"`
	DateKind     string   `json:"date_kind,omitempty"`
	Docs         []string `json:"docs"`
	Title        Text     `json:"title"`
	Domain       []string `json:"domain"`
	Impact       Impact   `json:"impact"`
	Severity     string   `json:"severity,omitempty"`
	Summary      Text     `json:"summary"`
	SymptomsText Text     `json:"symptoms_text"`
	// SymptomsTextKind is SymptomsReported or SymptomsReconstructed.
	SymptomsTextKind string    `json:"symptoms_text_kind,omitempty"`
	Trigger          Text      `json:"trigger"`
	Detection        Text      `json:"detection"`
	Lessons          Text      `json:"lessons"`
	Symptoms         []string  `json:"symptoms"`
	Components       []string  `json:"components"`
	RootCause        string    `json:"root_cause"`
	Contributing     []string  `json:"contributing"`
	Remediation      []Step    `json:"remediation"`
	ActionItems      []Step    `json:"action_items"`
	Timeline         Timeline  `json:"timeline"`
	Related          []Related `json:"related"`
	RecurrenceOf     *string   `json:"recurrence_of"`
	Sources          []Source  `json:"sources"`
	Review           Review    `json:"review"`
	UpdatedAt        string    `json:"updated_at,omitempty"`
	URL              string    `json:"url,omitempty"`

	// Extra holds fields this version does not know, as they were read.
	Extra map[string]json.RawMessage `json:"-"`
}

// knownFields lists the JSON names of Case's typed fields.
var knownFields = func() map[string]bool {
	m := map[string]bool{}
	for _, name := range []string{"id", "org", "org_slug", "date", "date_kind", "docs", "title", "domain",
		"impact", "severity", "summary", "symptoms_text", "symptoms_text_kind", "trigger", "detection", "lessons", "symptoms",
		"components", "root_cause", "contributing", "remediation", "action_items", "timeline", "related",
		"recurrence_of", "sources", "review", "updated_at", "url"} {
		m[name] = true
	}
	return m
}()

// caseFields has Case's fields without its methods, for encoding/json.
type caseFields Case

// UnmarshalJSON reads a case and keeps the fields it does not know in Extra.
func (c *Case) UnmarshalJSON(data []byte) error {
	var f caseFields
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	for k := range all {
		if knownFields[k] {
			delete(all, k)
		}
	}
	if len(all) == 0 {
		all = nil
	}
	*c = Case(f)
	c.Extra = all
	return nil
}

// MarshalJSON writes a case with the fields in Extra beside the known ones.
func (c Case) MarshalJSON() ([]byte, error) {
	known, err := json.Marshal(caseFields(c))
	if err != nil || len(c.Extra) == 0 {
		return known, err
	}
	var buf bytes.Buffer
	buf.Write(known[:len(known)-1])
	for _, k := range slices.Sorted(maps.Keys(c.Extra)) {
		if knownFields[k] {
			continue
		}
		name, _ := json.Marshal(k)
		buf.WriteByte(',')
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(c.Extra[k])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// Time returns the case's date, or the zero time when it has none or it does
// not parse. Dates may be given as YYYY, YYYY-MM or YYYY-MM-DD.
func (c *Case) Time() time.Time {
	t, _ := ParseDate(c.Date)
	return t
}

// ParseDate parses a case date: YYYY-MM-DD, YYYY-MM or YYYY.
func ParseDate(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02", "2006-01", "2006"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("date %q is not YYYY-MM-DD, YYYY-MM or YYYY", s)
}

// Duration is a span of an incident's timeline as the format writes it:
// "7m", "70h 34m", "2d 3h". It keeps the text it was read from, so a value
// that does not parse is still written back as it was (and reported by
// Validate).
type Duration struct {
	D    time.Duration
	Text string
	Err  error // why Text does not parse; nil for a valid duration
}

// ParseDuration parses a timeline duration such as "70h 34m", "45s" or
// "2d 4h". Parts are separated by spaces or written together ("1h30m").
func ParseDuration(s string) (Duration, error) {
	rest := strings.TrimSpace(s)
	if rest == "" {
		return Duration{}, fmt.Errorf("duration is empty")
	}
	var total time.Duration
	for rest != "" {
		rest = strings.TrimLeft(rest, " ")
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i > 6 || i == len(rest) {
			return Duration{}, fmt.Errorf("%q is not a duration like 70h 34m", s)
		}
		n, _ := strconv.Atoi(rest[:i])
		var unit time.Duration
		switch rest[i] {
		case 'd':
			unit = 24 * time.Hour
		case 'h':
			unit = time.Hour
		case 'm':
			unit = time.Minute
		case 's':
			unit = time.Second
		default:
			return Duration{}, fmt.Errorf("%q is not a duration like 70h 34m: units are d, h, m and s", s)
		}
		total += time.Duration(n) * unit
		rest = rest[i+1:]
	}
	return Duration{D: total, Text: s}, nil
}

// String returns the duration as it was written.
func (d Duration) String() string {
	if d.Text != "" {
		return d.Text
	}
	return d.D.String()
}

// MarshalJSON writes the duration as the text it was read from.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration written like "70h 34m". A value that does
// not parse is kept, with Err set, for Validate to report by field.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		*d = Duration{Text: string(b), Err: fmt.Errorf("%s is not a duration string like \"70h 34m\"", b)}
		return nil
	}
	p, err := ParseDuration(s)
	if err != nil {
		*d = Duration{Text: s, Err: err}
		return nil
	}
	*d = p
	return nil
}

// Tags returns all the case's tag ids: symptoms, components, root cause and
// contributing factors.
func (c *Case) Tags() []string {
	tags := slices.Concat(c.Symptoms, c.Components, c.Contributing)
	if c.RootCause != "" {
		tags = append(tags, c.RootCause)
	}
	return tags
}
