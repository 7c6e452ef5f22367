package digest

import (
	"fmt"
	"strings"

	"github.com/incidentbot/incidentbot/cases"
)

// Labeler gives tag labels; *cases.Taxonomy implements it.
type Labeler interface {
	Label(kind cases.Kind, id string, lang cases.Lang) string
}

var words = map[cases.Lang]map[string]string{
	cases.English: {
		"title":       "Weekly incident digest, %s (%s to %s)",
		"quiet":       "A quiet week: no alert or message needed a suggestion.",
		"activity":    "%d suggestions in %d incident channels (the week before: %d in %d).",
		"symptoms":    "Symptoms seen most",
		"components":  "Components seen most",
		"cases":       "Cases suggested most",
		"votes":       "%d× · %d helpful · %d not relevant",
		"notrelevant": "Marked not relevant (worth curating)",
		"added":       "Added to or updated in the library",
		"more":        "and %d more",
		"cow":         "Case of the week",
		"lesson":      "Lesson",
		"actions":     "Action items",
		"was":         "was %d",
		"new":         "new",
	},
	cases.Korean: {
		"title":       "주간 장애 다이제스트, %s (%s ~ %s)",
		"quiet":       "조용한 한 주였습니다. 제안이 필요한 알림이나 메시지가 없었습니다.",
		"activity":    "장애 채널 %[2]d곳에서 제안 %[1]d건 (지난주: %[4]d곳에서 %[3]d건).",
		"symptoms":    "가장 많이 본 증상",
		"components":  "가장 많이 본 구성 요소",
		"cases":       "가장 많이 제안한 사례",
		"votes":       "%d회 · 도움이 됨 %d · 관련 없음 %d",
		"notrelevant": "관련 없음으로 표시된 사례 (정리 대상)",
		"added":       "이번 주 라이브러리에 추가·수정된 사례",
		"more":        "외 %d건",
		"cow":         "이번 주의 사례",
		"lesson":      "교훈",
		"actions":     "후속 조치",
		"was":         "지난주 %d",
		"new":         "신규",
	},
}

// Say returns a phrase of the digest in lang.
func Say(lang cases.Lang, key string, args ...any) string {
	w, ok := words[lang]
	if !ok {
		w = words[cases.English]
	}
	if len(args) > 0 {
		return fmt.Sprintf(w[key], args...)
	}
	return w[key]
}

// Change describes a count against the week before: "+3", "−2" or "new".
func Change(lang cases.Lang, c Count) string {
	switch {
	case c.Prev == 0:
		return Say(lang, "new")
	case c.N > c.Prev:
		return fmt.Sprintf("+%d", c.N-c.Prev)
	case c.N < c.Prev:
		return fmt.Sprintf("−%d", c.Prev-c.N)
	}
	return "="
}

// Title is the digest's heading.
func (d *Digest) Title() string {
	return Say(d.Lang, "title", d.Week.Key, d.Week.From.Format("2006-01-02"), d.Week.To.AddDate(0, 0, -1).Format("2006-01-02"))
}

// Text renders the digest as plain text.
func (d *Digest) Text(tax Labeler) string {
	var b strings.Builder
	l := d.Lang
	fmt.Fprintf(&b, "%s\n\n", d.Title())
	if d.Quiet {
		fmt.Fprintln(&b, Say(l, "quiet"))
	} else {
		fmt.Fprintln(&b, Say(l, "activity", d.Suggestions, d.Channels, d.PrevSuggestions, d.PrevChannels))
		counts := func(heading string, kind cases.Kind, cs []Count) {
			if len(cs) == 0 {
				return
			}
			fmt.Fprintf(&b, "\n%s\n", Say(l, heading))
			for _, c := range cs {
				fmt.Fprintf(&b, "  - %s: %d (%s)\n", tax.Label(kind, c.ID, l), c.N, Change(l, c))
			}
		}
		counts("symptoms", cases.KindSymptom, d.Symptoms)
		counts("components", cases.KindComponent, d.Components)
		caseList := func(heading string, cs []CaseCount) {
			if len(cs) == 0 {
				return
			}
			fmt.Fprintf(&b, "\n%s\n", Say(l, heading))
			for _, c := range cs {
				fmt.Fprintf(&b, "  - %s (%s): %s\n", c.Case.Title.In(l), c.Case.ID, Say(l, "votes", c.N, c.Helpful, c.NotRelevant))
			}
		}
		caseList("cases", d.TopCases)
		caseList("notrelevant", d.NotRelevant)
	}
	if d.AddedTotal > 0 {
		fmt.Fprintf(&b, "\n%s\n", Say(l, "added"))
		for _, c := range d.Added {
			fmt.Fprintf(&b, "  - %s (%s)\n", c.Title.In(l), c.ID)
		}
		if more := d.AddedTotal - len(d.Added); more > 0 {
			fmt.Fprintf(&b, "  - %s\n", Say(l, "more", more))
		}
	}
	if c := d.CaseOfWeek; c != nil {
		fmt.Fprintf(&b, "\n%s: %s (%s · %s · %s)\n", Say(l, "cow"), c.Title.In(l), c.Org, c.Date, c.ID)
		if !c.Lessons.Empty() {
			fmt.Fprintf(&b, "  %s: %s\n", Say(l, "lesson"), c.Lessons.In(l))
		}
		if len(c.ActionItems) > 0 {
			fmt.Fprintf(&b, "  %s:\n", Say(l, "actions"))
			for _, a := range c.ActionItems {
				fmt.Fprintf(&b, "    - %s\n", a.Text.In(l))
			}
		}
	}
	return b.String()
}
