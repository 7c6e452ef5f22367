package postmortem

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/incidentbot/incidentbot/cases"
)

var (
	isoDate     = regexp.MustCompile(`(?:^|[^\d])((?:19|20)\d\d)[-./](\d{1,2})[-./](\d{1,2})(?:[^\d]|$)`)
	koDate      = regexp.MustCompile(`((?:19|20)\d\d)\s*년\s*(\d{1,2})\s*월\s*(\d{1,2})\s*일`)
	monthDay    = regexp.MustCompile(`(?i)\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+((?:19|20)\d\d)\b`)
	dayMonth    = regexp.MustCompile(`(?i)\b(\d{1,2})(?:st|nd|rd|th)?\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?,?\s+((?:19|20)\d\d)\b`)
	compactDate = regexp.MustCompile(`(?:^|[^\d])((?:19|20)\d\d)(\d\d)(\d\d)(?:[^\d]|$)`)
	koClock     = regexp.MustCompile(`(오전|오후)?\s*(\d{1,2})\s*시(간)?\s*(?:(\d{1,2})\s*분)?`)
	clockTime   = regexp.MustCompile(`(?i)(?:((?:19|20)\d\d-\d\d-\d\d)[ T,]+)?\b(\d{1,2}):(\d\d)(?::\d\d)?\s*(am|pm)?`)
)

var months = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
	"oct": 10, "nov": 11, "dec": 12}

func ymd(y, m, d string) string {
	yi, _ := strconv.Atoi(y)
	mi, _ := strconv.Atoi(m)
	di, _ := strconv.Atoi(d)
	t := time.Date(yi, time.Month(mi), di, 0, 0, 0, 0, time.UTC)
	if t.Year() != yi || int(t.Month()) != mi || t.Day() != di {
		return ""
	}
	return t.Format("2006-01-02")
}

// firstDate finds the earliest-written date in a text: 2025-03-04,
// 2025.03.04, "March 4, 2025", "4 March 2025" or "2025년 3월 4일".
func firstDate(s string) string {
	best, at := "", len(s)+1
	try := func(pos int, d string) {
		if d != "" && pos < at {
			best, at = d, pos
		}
	}
	if m := isoDate.FindStringSubmatchIndex(s); m != nil {
		try(m[2], ymd(s[m[2]:m[3]], s[m[4]:m[5]], s[m[6]:m[7]]))
	}
	if m := koDate.FindStringSubmatchIndex(s); m != nil {
		try(m[0], ymd(s[m[2]:m[3]], s[m[4]:m[5]], s[m[6]:m[7]]))
	}
	if m := monthDay.FindStringSubmatchIndex(s); m != nil {
		try(m[0], ymd(s[m[6]:m[7]], strconv.Itoa(months[strings.ToLower(s[m[2]:m[3]])]), s[m[4]:m[5]]))
	}
	if m := dayMonth.FindStringSubmatchIndex(s); m != nil {
		try(m[0], ymd(s[m[6]:m[7]], strconv.Itoa(months[strings.ToLower(s[m[4]:m[5]])]), s[m[2]:m[3]]))
	}
	return best
}

// normDate turns a front matter date into the case format, keeping only
// the day of a timestamp.
func normDate(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if _, err := cases.ParseDate(s); err == nil {
		return s
	}
	if len(s) >= 10 {
		if _, err := cases.ParseDate(s[:10]); err == nil {
			return s[:10]
		}
	}
	return firstDate(s)
}

// timelineEvent is one line of a timeline with the time it gives.
type timelineEvent struct {
	at   time.Duration // since the first event
	text string
}

var (
	resolvedWords = []string{"resolved", "resolution", "recovered", "recovery complete", "restored", "mitigated", "back to normal",
		"fully operational", "all clear", "incident closed", "closed the incident", "error rate normal", "returned to normal",
		"복구", "해소", "정상화", "해결", "정상 동작", "정상으로"}
	harmWords = []string{"fail", "error", "5xx", "503", "502", "500", "down", "outage", "latency", "slow", "spike", "evict", "unavailable",
		"timeout", "time out", "timing out", "crash", "leaves", "lost", "expire", "full", "stall", "drop", "degrad",
		"실패", "오류", "에러", "장애", "지연", "중단", "상승", "고갈", "만료", "다운"}
	detectedWords = []string{"alert", "paged", "page ", "pages ", "pager", "detected", "detect", "noticed", "report", "notified", "fired",
		"on-call", "oncall", "탐지", "알림", "인지", "감지", "발견", "신고", "호출", "제보"}
)

func hasAny(s string, words []string) bool {
	s = strings.ToLower(s)
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// timeline reads how long an incident took to detect and to resolve from a
// timeline section: the first event that speaks of harm (else the first
// event) is the start, the first later event that speaks of an alert or a
// report is the detection, and the last that speaks of recovery is the
// resolution.
func timeline(s *section) cases.Timeline {
	var lines []string
	lines = append(lines, s.items...)
	for _, r := range s.rows {
		lines = append(lines, strings.Join(r, " "))
	}
	if len(s.items) == 0 && len(s.rows) == 0 {
		for _, p := range s.paras {
			lines = append(lines, strings.Split(p, "\n")...)
		}
	}
	var evs []timelineEvent
	var first, prev time.Time
	for _, l := range lines {
		m := clockTime.FindStringSubmatch(l)
		if m == nil {
			// "오후 2시 5분", "14시 05분"
			k := koClock.FindStringSubmatch(l)
			if k == nil || k[3] != "" { // "3시간" is a span, not a time
				continue
			}
			ampm := map[string]string{"오전": "am", "오후": "pm"}[k[1]]
			if k[4] == "" {
				k[4] = "0"
			}
			m = []string{k[0], "", k[2], k[4], ampm}
		}
		h, _ := strconv.Atoi(m[2])
		mi, _ := strconv.Atoi(m[3])
		if h > 23 || mi > 59 {
			continue
		}
		switch strings.ToLower(m[4]) {
		case "pm":
			if h < 12 {
				h += 12
			}
		case "am":
			if h == 12 {
				h = 0
			}
		}
		day := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		if m[1] != "" {
			if d, err := time.Parse("2006-01-02", m[1]); err == nil {
				day = d
			}
		}
		t := day.Add(time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute)
		if !prev.IsZero() && m[1] == "" && t.Before(prev) {
			// A time of day earlier than the last one, with no date: the
			// next day.
			for t.Before(prev) {
				t = t.Add(24 * time.Hour)
			}
		}
		if first.IsZero() {
			first = t
		}
		prev = t
		evs = append(evs, timelineEvent{at: t.Sub(first), text: l})
	}
	var tl cases.Timeline
	if len(evs) < 2 {
		return tl
	}
	// The incident starts with the first event that speaks of harm, when
	// one comes before the detection: a deploy an hour earlier is the
	// cause, not the start.
	detected := -1
	for i, e := range evs[1:] {
		if hasAny(e.text, detectedWords) && !hasAny(e.text, resolvedWords) {
			detected = i + 1
			break
		}
	}
	start := 0
	for i, e := range evs {
		if detected >= 0 && i >= detected {
			break
		}
		if hasAny(e.text, harmWords) {
			start = i
			break
		}
	}
	if detected > start {
		d := duration(evs[detected].at - evs[start].at)
		tl.DetectedAfter = &d
	}
	for i := len(evs) - 1; i > start; i-- {
		if hasAny(evs[i].text, resolvedWords) {
			d := duration(evs[i].at - evs[start].at)
			tl.ResolvedAfter = &d
			break
		}
	}
	return tl
}

// duration writes a span as the case format does: "45m", "2h 5m", "1d 3h".
func duration(d time.Duration) cases.Duration {
	mins := int(d / time.Minute)
	days, hours, m := mins/(24*60), mins/60%24, mins%60
	var parts []string
	if days > 0 {
		parts = append(parts, fmt.Sprintf("%dd", days))
	}
	if hours > 0 {
		parts = append(parts, fmt.Sprintf("%dh", hours))
	}
	if m > 0 || len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("%dm", m))
	}
	out, _ := cases.ParseDuration(strings.Join(parts, " "))
	return out
}
