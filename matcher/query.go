package matcher

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/incidentbot/incidentbot/cases"
)

// Filters narrow a lookup to cases with given tags, org or date.
type Filters struct {
	Symptoms     []string
	Components   []string
	RootCauses   []string
	Contributing []string
	Orgs         []string // lower case
	Since        string   // YYYY, YYYY-MM or YYYY-MM-DD
}

// Empty reports whether no filter is set.
func (f Filters) Empty() bool {
	return len(f.Symptoms)+len(f.Components)+len(f.RootCauses)+len(f.Contributing)+len(f.Orgs) == 0 && f.Since == ""
}

// filterKeys maps the words a user types to the filter they set.
var filterKeys = map[string]string{
	"symptom": "symptom", "symptoms": "symptom",
	"component": "component", "components": "component",
	"root_cause": "root_cause", "rootcause": "root_cause", "cause": "root_cause",
	"contributing": "contributing",
	"org":          "org",
	"since":        "since",
}

// ParseQuery splits a lookup into free text and filters written as
// key:value words (symptom:high-latency component:cdn root_cause:config-change
// org:cloudflare since:2023). A value with spaces may be quoted
// (org:"google cloud"). Words that look like filters but are not (x509:,
// http://...) stay in the text. It never interprets the text as query syntax.
func ParseQuery(q string) (text string, f Filters, err error) {
	var rest []string
	for _, tok := range splitQuoted(q) {
		key, value, ok := strings.Cut(tok, ":")
		kind, known := filterKeys[strings.ToLower(key)]
		if !ok || !known || value == "" || strings.HasPrefix(value, "//") {
			rest = append(rest, tok)
			continue
		}
		value = strings.Trim(value, `"'“”`)
		switch kind {
		case "symptom":
			f.Symptoms = append(f.Symptoms, strings.ToLower(value))
		case "component":
			f.Components = append(f.Components, strings.ToLower(value))
		case "root_cause":
			f.RootCauses = append(f.RootCauses, strings.ToLower(value))
		case "contributing":
			f.Contributing = append(f.Contributing, strings.ToLower(value))
		case "org":
			f.Orgs = append(f.Orgs, strings.ToLower(value))
		case "since":
			if _, perr := cases.ParseDate(value); perr != nil {
				return "", Filters{}, fmt.Errorf("since:%s: write a date as since:2023, since:2023-05 or since:2023-05-01", value)
			}
			f.Since = value
		}
	}
	return strings.Join(rest, " "), f, nil
}

// splitQuoted splits on white space, keeping "quoted parts" of a word
// together.
func splitQuoted(s string) []string {
	var out []string
	var cur strings.Builder
	inQuote := false
	for _, r := range s {
		switch {
		case r == '"' || r == '“' || r == '”':
			inQuote = !inQuote
			cur.WriteRune('"')
		case unicode.IsSpace(r) && !inQuote:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// MatchOptions are what a caller adds to a text it matches.
type MatchOptions struct {
	// Boosts are the votes people cast on cases for texts like this one
	// (see Signature.Similar): they move a case that matched on its own up
	// or down, within bounds, and never bring in one that did not.
	Boosts []Boost
	// Channel is the Slack channel the lookup is for. A case that
	// Options.Only keeps to a channel is found only by lookups for that
	// channel; an empty Channel finds none of them.
	Channel string
}

// sees reports whether a lookup with o may see the case with id.
func (o MatchOptions) sees(only map[string]string, id string) bool {
	ch, kept := only[id]
	return !kept || (o.Channel != "" && ch == o.Channel)
}

// Boost is the votes on one case for texts like the one matched.
type Boost struct {
	CaseID      string
	Helpful     int
	NotRelevant int
}
