package matcher

import (
	"regexp"
	"strings"
)

// Status updates and reports reassure as often as they report: "no data was
// lost", "existing instances are not affected", "데이터 유실은 없었습니다".
// Such a clause names a symptom or a component only to say it is fine, so
// it must not signal that tag. reassurance finds those clauses; unsaid
// blanks them out of the text that tags are read from (the text search
// still sees the whole text).
//
// Only denials of impact are blanked, not every negation: "users cannot
// log in", "no healthy upstream" and "not responding" report trouble.
var reassurance = []*regexp.Regexp{
	// "no (customer) data was lost", "no payments were affected",
	// "nothing was exposed", "no impact to ...".
	// At most three words between the denial and its verb, so that "no
	// failover, and all data was lost" is not read as a denial.
	regexp.MustCompile(`(?i)\b(no|none of the|nothing|neither)(\s+[\w'-]+){0,3}?\s+(was|were|is|are|has been|have been|had been)\s+(lost|affected|impacted|exposed|accessed|compromised|corrupted|deleted|leaked|at risk)\b[^.;!?\n]*`),
	regexp.MustCompile(`(?i)\bno\s+(\w+\s+){0,3}?(impact|loss|data loss|exposure|downtime|outage)\b[^.;!?\n]*`),
	// "existing instances are not affected", "X remained unaffected",
	// "we have no indication that data was accessed".
	regexp.MustCompile(`(?i)[^.,;:!?\n]*\b(is|are|was|were|has been|have been|remain|remains|remained)\s+(not\s+|un)(affected|impacted)\b[^.;!?\n]*`),
	regexp.MustCompile(`(?i)\b(no|not any)\s+(evidence|indication)\b[^.;!?\n]*`),
	// Korean: "영향은 없습니다", "데이터 유실은 없었습니다", "손실되지 않았습니다".
	regexp.MustCompile(`[^.;!?\n]*(영향|유실|손실|피해|노출|유출)(은|는|이|가|도)?\s*(전혀\s*)?없(습니다|었습니다|으며|고|어|음|다)[^.;!?\n]*`),
	regexp.MustCompile(`[^.;!?\n]*(유실|손실|노출|유출|영향을\s*받)(되|하|지)?지\s*않(았|습니다|으며|고|음)[^.;!?\n]*`),
}

// unsaid returns text with its reassuring clauses blanked (replaced by
// spaces, so offsets and word boundaries hold).
func unsaid(text string) string {
	out := text
	for _, re := range reassurance {
		if !re.MatchString(out) {
			continue
		}
		out = re.ReplaceAllStringFunc(out, func(s string) string { return strings.Repeat(" ", len(s)) })
	}
	return out
}
