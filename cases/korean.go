package cases

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// particles are the Korean postpositions (and the copula forms written like
// them) that attach to the word before them. Longer forms come first so that
// "에서는" is taken whole rather than as "에".
var particles = []string{
	"이라는", "이라고", "이었다", "이었고", "이었지만", "으로는", "으로도", "으로서", "으로의", "으로부터",
	"에서는", "에서도", "에서의", "에서만", "에게서", "까지는", "까지도", "까지의", "부터는", "부터의",
	"만으로", "보다는", "처럼", "보다", "에게", "에서", "에는", "에도", "에만", "에의", "로는", "로도",
	"로서", "로의", "로부터", "와는", "과는", "와의", "과의", "와도", "과도", "라는", "라고", "이나",
	"이며", "이고", "이다", "이자", "였다", "였고", "였지만", "마다", "만큼", "조차", "부터", "까지",
	"으로", "쯤부터", "쯤까지", "쯤에", "쯤",
	"가", "는", "를", "의", "에", "로", "와", "을", "은", "과", "도", "만", "나", "이",
}

// particleRE finds a space between a Latin word, number or closing bracket
// and a particle that belongs to it: "Let's Encrypt 가" → "Let's Encrypt가".
// The particle must end a word. "이" and "나" are also words of their own
// ("이 문제", "하나"), so after a closing bracket or quote they are left alone.
var particleRE = regexp.MustCompile(`([A-Za-z0-9%)\]”’"]) (` + strings.Join(particles, "|") + `)([\s.,;:!?)\]”’"…/·]|$)`)

// NormalizeKoreanSpacing removes the space that some text puts between a
// Latin word or a number and the Korean particle after it, the spacing of
// standard Korean. Text without such a space is returned unchanged.
func NormalizeKoreanSpacing(s string) string {
	for {
		out := particleRE.ReplaceAllStringFunc(s, func(m string) string {
			sub := particleRE.FindStringSubmatch(m)
			before, particle, after := sub[1], sub[2], sub[3]
			if (particle == "이" || particle == "나") && !isLatinOrDigit(before) {
				return m
			}
			return before + particle + after
		})
		if out == s {
			return out
		}
		s = out // "A 와 B 와" overlaps: go again until nothing changes
	}
}

// KoreanSpacingIssues lists, for each Korean text of c, the places where a
// particle stands apart from the Latin word or number it belongs to.
func KoreanSpacingIssues(c *Case) []string {
	var out []string
	c.eachKorean(func(field, s string) {
		if NormalizeKoreanSpacing(s) == s {
			return
		}
		for _, loc := range particleRE.FindAllStringIndex(s, 3) {
			start := max(0, loc[0]-12)
			for start > 0 && !utf8.RuneStart(s[start]) {
				start--
			}
			out = append(out, field+": …"+strings.TrimSpace(s[start:loc[1]]))
		}
	})
	return out
}

func isLatinOrDigit(s string) bool {
	if s == "" {
		return false
	}
	b := s[0]
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// eachKorean calls fn with the name and Korean text of every bilingual field.
func (c *Case) eachKorean(fn func(field, s string)) {
	for _, f := range []struct {
		name string
		t    Text
	}{
		{"title", c.Title}, {"summary", c.Summary}, {"symptoms_text", c.SymptomsText},
		{"trigger", c.Trigger}, {"detection", c.Detection}, {"lessons", c.Lessons},
	} {
		if f.t.Ko != "" {
			fn(f.name, f.t.Ko)
		}
	}
	for i, r := range c.Remediation {
		if r.Text.Ko != "" {
			fn("remediation["+strconv.Itoa(i)+"].text", r.Text.Ko)
		}
	}
	for i, a := range c.ActionItems {
		if a.Text.Ko != "" {
			fn("action_items["+strconv.Itoa(i)+"].text", a.Text.Ko)
		}
	}
}
