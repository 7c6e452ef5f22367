package postmortem

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"

	"github.com/incidentbot/incidentbot/cases"
)

// blockKind is the kind of a block of a document.
type blockKind int

const (
	bPara blockKind = iota
	bHeading
	bList
	bTable
	bCode
)

// block is one block of a document, reduced to its text.
type block struct {
	kind  blockKind
	level int        // heading level
	text  string     // paragraph, heading or code text
	lines []string   // a paragraph's source lines
	items []string   // list items, nested ones included, in order
	rows  [][]string // table rows, the header first
}

var md = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList))

// blocks parses Markdown into its blocks, in order.
func blocks(src []byte) []block {
	doc := md.Parser().Parse(text.NewReader(src))
	var out []block
	var walk func(n ast.Node, depth int)
	walk = func(n ast.Node, depth int) {
		if depth > 64 {
			return
		}
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch v := c.(type) {
			case *ast.Heading:
				out = append(out, block{kind: bHeading, level: v.Level, text: inline(v, src)})
			case *ast.Paragraph, *ast.TextBlock:
				if t := inline(v, src); strings.TrimSpace(t) != "" {
					b := block{kind: bPara, text: t}
					lines := c.Lines()
					for i := range min(lines.Len(), 32) {
						seg := lines.At(i)
						b.lines = append(b.lines, strings.TrimSpace(string(seg.Value(src))))
					}
					out = append(out, b)
				}
			case *ast.List:
				b := block{kind: bList}
				listItems(v, src, &b.items, depth)
				if len(b.items) > 0 {
					out = append(out, b)
				}
			case *east.Table:
				b := block{kind: bTable}
				for r := v.FirstChild(); r != nil; r = r.NextSibling() {
					var row []string
					for cell := r.FirstChild(); cell != nil; cell = cell.NextSibling() {
						row = append(row, strings.TrimSpace(inline(cell, src)))
					}
					b.rows = append(b.rows, row)
				}
				out = append(out, b)
			case *ast.FencedCodeBlock, *ast.CodeBlock:
				var buf bytes.Buffer
				lines := c.Lines()
				for i := range lines.Len() {
					seg := lines.At(i)
					buf.Write(seg.Value(src))
				}
				if t := strings.TrimRight(buf.String(), "\n"); t != "" {
					out = append(out, block{kind: bCode, text: t})
				}
			case *ast.Blockquote:
				walk(v, depth+1)
			case *ast.ThematicBreak, *ast.HTMLBlock, *ast.LinkReferenceDefinition:
			default:
				walk(c, depth+1)
			}
		}
	}
	walk(doc, 0)
	return out
}

// listItems collects the text of each item of a list and of its nested
// lists, in document order.
func listItems(l *ast.List, src []byte, out *[]string, depth int) {
	if depth > 64 {
		return
	}
	for it := l.FirstChild(); it != nil; it = it.NextSibling() {
		var parts []string
		var nested []*ast.List
		for c := it.FirstChild(); c != nil; c = c.NextSibling() {
			switch v := c.(type) {
			case *ast.List:
				nested = append(nested, v)
			default:
				if t := strings.TrimSpace(inline(c, src)); t != "" {
					parts = append(parts, t)
				}
			}
		}
		if t := strings.Join(parts, " "); t != "" {
			*out = append(*out, t)
		}
		for _, n := range nested {
			listItems(n, src, out, depth+1)
		}
	}
}

// inline returns the text of a node's inline content, with soft line breaks
// as spaces and hard ones as new lines.
func inline(n ast.Node, src []byte) string {
	var b strings.Builder
	var walk func(n ast.Node, depth int)
	walk = func(n ast.Node, depth int) {
		if depth > 64 {
			return
		}
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch v := c.(type) {
			case *ast.Text:
				b.Write(v.Value(src))
				switch {
				case v.HardLineBreak():
					b.WriteByte('\n')
				case v.SoftLineBreak():
					b.WriteByte(' ')
				}
			case *ast.String:
				b.Write(v.Value)
			case *ast.CodeSpan:
				walk(v, depth+1)
			case *ast.AutoLink:
				b.Write(v.Label(src))
			case *east.TaskCheckBox, *ast.Image, *ast.RawHTML:
			default:
				walk(c, depth+1)
			}
		}
	}
	walk(n, 0)
	return strings.TrimSpace(b.String())
}

// field is where a section of a document goes in the case.
type field int

const (
	fNone field = iota
	fIgnore
	fSummary
	fSymptoms
	fImpact
	fTrigger
	fCause
	fDetection
	fRemediation
	fActions
	fLessons
	fTimeline
)

var fieldNames = map[field]string{fSummary: "summary", fSymptoms: "symptoms_text", fImpact: "impact", fTrigger: "trigger",
	fCause: "root cause", fDetection: "detection", fRemediation: "remediation", fActions: "action_items",
	fLessons: "lessons", fTimeline: "timeline"}

// headingWords map the words of section headings to fields, most specific
// first: "후속 조치" is an action item before "조치" is a remediation, and
// "Responders" is nothing before "Response" is a remediation. English words
// match at the start of a word of the heading; Korean ones anywhere.
var headingWords = []struct {
	f     field
	words []string
}{
	{fIgnore, []string{"responders", "participants", "attendees", "people involved", "supporting information",
		"glossary", "appendix", "references", "related links", "document status", "reviewers", "참여자", "참석자", "참고 자료", "작성자"}},
	{fActions, []string{"action item", "action-item", "actionable", "corrective action", "corrective and preventative", "preventive", "preventative",
		"prevention", "follow-up", "follow up", "followup", "next step", "remediation item", "todo", "to-do", "to do",
		"재발 방지", "재발방지", "후속 조치", "후속조치", "개선 과제", "개선 사항", "개선사항", "액션 아이템", "향후 계획", "대책"}},
	{fTimeline, []string{"timeline", "time line", "chronology", "sequence of events", "타임라인", "경과", "시간대별", "시간순", "진행 상황"}},
	{fLessons, []string{"lessons", "lesson learned", "learnings", "what went well", "what went wrong", "where we got lucky",
		"how'd we do", "how did we do", "takeaway", "reflection", "교훈", "회고", "배운 점", "잘한 점", "아쉬운 점"}},
	{fCause, []string{"root cause", "root-cause", "five whys", "5 whys", "cause", "fault", "why it happened", "contributing factor",
		"analysis", "why", "근본 원인", "원인"}},
	{fTrigger, []string{"trigger", "leadup", "lead-up", "lead up", "발단", "트리거", "계기"}},
	{fDetection, []string{"detection", "how we found", "how it was detected", "discovery", "탐지", "감지", "인지", "발견"}},
	{fRemediation, []string{"resolution", "recovery", "mitigation", "response", "remediation", "resolving", "fix", "how we fixed",
		"조치", "대응", "복구", "해결", "완화"}},
	{fImpact, []string{"impact", "blast radius", "customer effect", "영향", "피해"}},
	{fSymptoms, []string{"symptom", "what happened", "what users saw", "what we saw", "증상", "현상", "장애 내용", "발생 내용"}},
	{fSummary, []string{"summary", "overview", "executive", "tl;dr", "tldr", "description", "background", "개요", "요약", "배경", "설명"}},
}

// classify maps a heading or label to a field; fNone when it names none.
func classify(heading string) field {
	h := " " + normHeading(heading) + " "
	for _, hw := range headingWords {
		for _, w := range hw.words {
			if isHangul(w) {
				if strings.Contains(h, w) {
					return hw.f
				}
				continue
			}
			if strings.Contains(h, " "+w) {
				return hw.f
			}
		}
	}
	return fNone
}

// normHeading lower-cases a heading and drops numbering, emoji and
// punctuation other than the apostrophes and dashes keywords use.
func normHeading(s string) string {
	s = strings.ToLower(strings.NewReplacer("’", "'", "‘", "'").Replace(s))
	var b strings.Builder
	for _, r := range s {
		switch {
		case unicode.IsLetter(r), r == '\'', r == '-', r == ';':
			b.WriteRune(r)
		case unicode.IsDigit(r):
			b.WriteRune(r)
		default:
			b.WriteByte(' ')
		}
	}
	fields := strings.Fields(b.String())
	// Numbering such as "1." or "3)" at the start says nothing.
	for len(fields) > 0 && strings.IndexFunc(fields[0], func(r rune) bool { return !unicode.IsDigit(r) }) < 0 {
		fields = fields[1:]
	}
	return strings.Join(fields, " ")
}

func isHangul(s string) bool { return cases.HasHangul(s) }

// section is the text a document gives one field.
type section struct {
	paras []string   // paragraphs and code, in order
	items []string   // list items
	rows  [][]string // table rows (header first), one table after another
	heads [][]string // the header row of each table in rows
}

func (s *section) add(b block) {
	if b.kind != bTable && isPlaceholder(b.text) && len(b.items) == 0 {
		return
	}
	switch b.kind {
	case bPara, bCode:
		s.paras = append(s.paras, b.text)
	case bHeading:
		s.paras = append(s.paras, b.text)
	case bList:
		s.items = append(s.items, b.items...)
		s.paras = append(s.paras, "- "+strings.Join(b.items, "\n- "))
	case bTable:
		if len(b.rows) > 0 {
			s.heads = append(s.heads, b.rows[0])
			s.rows = append(s.rows, b.rows[1:]...)
			for _, r := range b.rows[1:] {
				s.paras = append(s.paras, strings.Join(nonEmpty(r), " | "))
			}
		}
	}
}

func (s *section) text() string { return strings.TrimSpace(strings.Join(s.paras, "\n\n")) }

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

// frontMatter is what a YAML front matter may say.
type frontMatter struct {
	ID, Title, Date, Severity, Org string
	Services                       []string
	Summary                        string
}

// splitFrontMatter cuts a leading "---" YAML block off a document.
func splitFrontMatter(src []byte) (frontMatter, []byte, bool) {
	var fm frontMatter
	s := bytes.TrimPrefix(src, []byte("\xef\xbb\xbf"))
	if !bytes.HasPrefix(s, []byte("---\n")) && !bytes.HasPrefix(s, []byte("---\r\n")) {
		return fm, src, false
	}
	rest := s[bytes.IndexByte(s, '\n')+1:]
	end := -1
	for off := 0; off < len(rest); {
		nl := bytes.IndexByte(rest[off:], '\n')
		line := rest[off:]
		if nl >= 0 {
			line = rest[off : off+nl]
		}
		if t := bytes.TrimRight(line, "\r "); bytes.Equal(t, []byte("---")) || bytes.Equal(t, []byte("...")) {
			end = off
			break
		}
		if nl < 0 {
			break
		}
		off += nl + 1
	}
	if end < 0 {
		return fm, src, false
	}
	var m map[string]any
	if err := unmarshalYAML(rest[:end], &m); err != nil {
		return fm, src, false
	}
	body := rest[end:]
	if nl := bytes.IndexByte(body, '\n'); nl >= 0 {
		body = body[nl+1:]
	} else {
		body = nil
	}
	str := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := m[k]; ok && v != nil {
				switch t := v.(type) {
				case time.Time:
					return t.Format("2006-01-02")
				case string:
					return strings.TrimSpace(t)
				case []any, map[string]any:
					continue
				default:
					return strings.TrimSpace(fmt.Sprint(t))
				}
			}
		}
		return ""
	}
	fm.ID = str("id", "slug")
	fm.Title = str("title", "name", "incident")
	fm.Date = str("date", "incident_date", "started", "start", "started_at")
	fm.Severity = str("severity", "sev", "priority")
	fm.Org = str("org", "organisation", "organization", "company", "team")
	fm.Summary = str("summary", "description")
	for _, k := range []string{"services", "service", "systems", "components", "affected_services"} {
		switch v := m[k].(type) {
		case string:
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					fm.Services = append(fm.Services, s)
				}
			}
		case []any:
			for _, s := range v {
				if str, ok := s.(string); ok && strings.TrimSpace(str) != "" {
					fm.Services = append(fm.Services, strings.TrimSpace(str))
				}
			}
		}
	}
	return fm, body, true
}

// unmarshalYAML reads front matter, which is small, without letting a
// broken one panic the reader.
func unmarshalYAML(data []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("front matter: %v", r)
		}
	}()
	if len(data) > 64<<10 {
		return fmt.Errorf("front matter is larger than 64 KiB")
	}
	return yaml.Unmarshal(data, v)
}

// readMarkdown reads a Markdown postmortem into a draft. htmlTitle is the
// title of the HTML page it came from, if any.
func readMarkdown(name string, src []byte, htmlTitle string) *Draft {
	src = bytes.ToValidUTF8(src, []byte("\uFFFD"))
	fm, body, hasFM := splitFrontMatter(src)
	bs := blocks(body)

	secs := map[field]*section{}
	get := func(f field) *section {
		s := secs[f]
		if s == nil {
			s = &section{}
			secs[f] = s
		}
		return s
	}
	var preamble section // text before the first section
	var unused []string
	title := fm.Title
	cur, curLevel := fNone, 0
	titleTaken := title != ""
	fmTitle := titleTaken
	var labelDate string
	for i, b := range bs {
		if b.kind == bHeading {
			f := classify(b.text)
			if !titleTaken && f == fNone && (b.level == 1 || !hasHeadingLevel(bs, 1)) {
				title, titleTaken = b.text, true
				cur, curLevel = fNone, 0
				continue
			}
			if titleTaken && !fmTitle && f == fNone && genericTitle(title) && !genericTitle(b.text) {
				// "# Postmortem" then "## Payments outage": the second is the
				// title.
				title = b.text
				cur, curLevel = fNone, 0
				continue
			}
			if f == fNone && cur != fNone && b.level > curLevel {
				// A subheading of a section ("Short term" under "Action
				// items") stays in it.
				get(cur).add(b)
				continue
			}
			if f == fNone {
				unused = append(unused, b.text)
			}
			cur, curLevel = f, b.level
			continue
		}
		// A paragraph that is a label ("Root cause:", "**Impact**") opens a
		// section; one that starts with a label ("Impact: 3% of logins
		// failed.") gives that field its text.
		if b.kind == bPara {
			// A block of "Key: value" lines states the document's title,
			// date, status or authors.
			meta, used := 0, 0
			for _, l := range b.lines {
				k, v, ok := metaLabel(l)
				if !ok {
					if key, _, found := strings.Cut(l, ":"); found && len(strings.Fields(key)) <= 3 {
						continue
					}
					meta = -1
					break
				}
				meta++
				switch {
				case k == "title" && !fmTitle && (!titleTaken || genericTitle(title)):
					title, titleTaken = strings.Trim(v, "*_ "), true
					used++
				case k == "date" && labelDate == "":
					if d := firstDate(v); d != "" {
						labelDate = d
						used++
					}
				}
			}
			if meta > 0 && used > 0 {
				continue
			}
			if len(b.lines) > 1 {
				// "■ 원인" on its own line, then the section's lines, all in
				// one paragraph of a plain-text document.
				if f := shortLabel(b.lines[0]); f != fNone {
					cur, curLevel = f, 7
					if f != fIgnore {
						for _, nb := range linesToBlocks(b.lines[1:]) {
							get(f).add(nb)
						}
					}
					continue
				}
			}
			if f, rest, ok := label(b.text); ok {
				if rest == "" {
					cur, curLevel = f, 7
					continue
				}
				if f != fIgnore {
					get(f).add(block{kind: bPara, text: rest})
				}
				if i+1 < len(bs) && bs[i+1].kind != bPara && bs[i+1].kind != bHeading {
					cur, curLevel = f, 7
				}
				continue
			}
		}
		switch cur {
		case fNone:
			preamble.add(b)
		case fIgnore:
		default:
			get(cur).add(b)
		}
	}
	if (!titleTaken || genericTitle(title)) && htmlTitle != "" && !genericTitle(cleanTitle(htmlTitle)) {
		title = htmlTitle
	}
	if genericTitle(title) {
		title = "" // the summary's first sentence says more
	}
	if title == "" && len(bs) > 0 && bs[0].kind == bPara && len(bs[0].lines) >= 2 && len(preamble.paras) > 0 {
		// Plain text whose first line is a short title above the body:
		// "Payments outage 2025-03-01" then the account. A line wrapped in
		// the middle of a sentence is as long as the next one.
		first, next := bs[0].lines[0], bs[0].lines[1]
		n := utf8.RuneCountInString(first)
		if n > 0 && n <= 100 && !strings.ContainsAny(first[len(first)-1:], ".!?:;,") && n*5 < utf8.RuneCountInString(next)*3 &&
			strings.HasPrefix(preamble.paras[0], first) {
			title = first
			preamble.paras[0] = strings.TrimSpace(strings.TrimPrefix(preamble.paras[0], first))
		}
	}

	c := &cases.Case{Review: cases.Review{WrittenBy: "import"}}
	d := &Draft{Case: c, Services: fm.Services, Unused: unused}
	full := string(body)
	korean := isKoreanDoc(full + " " + title)
	txt := func(s string) cases.Text {
		s = strings.TrimSpace(s)
		if korean {
			return cases.Text{Ko: s}
		}
		return cases.Text{En: s}
	}

	c.ID = fm.ID
	if c.ID == "" {
		c.ID = idFromName(name)
	} else {
		c.ID = SafeID(c.ID)
	}
	c.Org = fm.Org
	c.Severity = fm.Severity

	if title == "" {
		// Prose with no headings: its first sentence is the title.
		title = firstSentence(preamble.text())
	}
	if title == "" {
		title = firstSentence(secText(secs[fSummary]))
	}
	if title == "" {
		title = firstSentence(fm.Summary)
	}
	c.Title = txt(cleanTitle(title))

	summary := fm.Summary
	if s := secs[fSummary]; s != nil {
		summary = strings.TrimSpace(summary + "\n\n" + s.text())
	}
	if summary == "" {
		summary = clip(preamble.text(), 3000)
	}
	if summary == "" {
		// No summary and no text before the first section: the account of
		// what happened, else the cause, is the nearest thing to one.
		for _, f := range []field{fSymptoms, fImpact, fCause, fTrigger} {
			if t := secText(secs[f]); t != "" {
				summary = clip(t, 3000)
				break
			}
		}
	}
	c.Summary = txt(summary)

	if s := secs[fSymptoms]; s != nil {
		c.SymptomsText = txt(s.text())
	}
	if c.SymptomsText.Empty() {
		// What users and responders saw is the nearest thing to symptoms a
		// document without a symptoms section has: its impact and how the
		// incident was detected, else (prose) its first paragraph.
		seen := strings.TrimSpace(secText(secs[fImpact]) + "\n\n" + secText(secs[fDetection]))
		if seen == "" && len(preamble.paras) > 1 {
			seen = preamble.paras[0]
		}
		c.SymptomsText = txt(seen)
	}
	if s := secs[fImpact]; s != nil {
		scope := s.text()
		if len(s.items) > 0 && len(s.paras) == 1 {
			var b strings.Builder
			for i, it := range s.items {
				if i > 0 {
					if strings.ContainsAny(s.items[i-1][len(s.items[i-1])-1:], ".!?") {
						b.WriteString(" ")
					} else {
						b.WriteString("; ")
					}
				}
				b.WriteString(it)
			}
			scope = b.String()
		}
		c.Impact.Scope = txt(clip(oneLine(scope), 600))
	}
	var trigger []string
	if s := secs[fTrigger]; s != nil {
		trigger = append(trigger, s.text())
	}
	if s := secs[fCause]; s != nil {
		trigger = append(trigger, s.text())
	}
	c.Trigger = txt(strings.Join(trigger, "\n\n"))
	if s := secs[fDetection]; s != nil {
		c.Detection = txt(s.text())
	}
	if s := secs[fLessons]; s != nil {
		c.Lessons = txt(s.text())
	}
	if s := secs[fRemediation]; s != nil {
		c.Remediation = steps(s, txt)
	}
	if s := secs[fActions]; s != nil {
		c.ActionItems = steps(s, txt)
	}
	if s := secs[fTimeline]; s != nil {
		c.Timeline = timeline(s)
	}

	// The date: front matter, else the file name, else the first date the
	// document writes (its summary first).
	c.Date = normDate(fm.Date)
	if c.Date == "" {
		c.Date = labelDate
	}
	if c.Date == "" {
		c.Date = firstDate(filepath.Base(name))
	}
	if c.Date == "" {
		if m := compactDate.FindStringSubmatch(filepath.Base(name)); m != nil {
			c.Date = ymd(m[1], m[2], m[3])
		}
	}
	if c.Date == "" {
		c.Date = firstDate(summary)
	}
	if c.Date == "" {
		c.Date = firstDate(full)
	}

	var inf []string
	for _, s := range []string{title, summary, c.SymptomsText.En + c.SymptomsText.Ko, secText(secs[fImpact]),
		secText(secs[fDetection]), c.Trigger.En + c.Trigger.Ko} {
		if strings.TrimSpace(s) != "" {
			inf = append(inf, s)
		}
	}
	if len(fm.Services) > 0 {
		inf = append(inf, strings.Join(fm.Services, ", "))
	}
	d.Text = dropNegated(strings.Join(inf, "\n\n"))
	d.inventory()
	if hasFM {
		d.Found = append(d.Found, "front matter")
	}
	return d
}

func secText(s *section) string {
	if s == nil {
		return ""
	}
	return s.text()
}

func hasHeadingLevel(bs []block, level int) bool {
	for _, b := range bs {
		if b.kind == bHeading && b.level == level {
			return true
		}
	}
	return false
}

// label reads a paragraph that starts with a field's name and a colon:
// "Root cause: ..." or "**Impact:** ...". rest is the text after the colon.
func label(p string) (field, string, bool) {
	first, _, _ := strings.Cut(p, "\n")
	if first == p {
		// A short line on its own, often bold: "**Follow-ups**".
		if f := shortLabel(p); f != fNone {
			return f, "", true
		}
	}
	i := strings.IndexAny(first, ":：")
	if i <= 0 || utf8.RuneCountInString(first[:i]) > 40 {
		return fNone, "", false
	}
	f := classify(first[:i])
	if f == fNone {
		return fNone, "", false
	}
	// A sentence that happens to start with a word like "Impact" is not a
	// label: labels are a few words.
	if len(strings.Fields(first[:i])) > 5 {
		return fNone, "", false
	}
	_, size := utf8.DecodeRuneInString(first[i:])
	return f, strings.TrimSpace(p[i+size:]), true
}

// steps makes remediation steps or action items of a section: the action
// column of its tables, its list items, else its paragraphs.
func steps(s *section, txt func(string) cases.Text) []cases.Step {
	var out []cases.Step
	addStep := func(t string) {
		t = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(t), "[ ]"), "[x]"))
		if t == "" || strings.HasSuffix(t, ":") && utf8.RuneCountInString(t) < 40 {
			return // a label such as "Short term:" groups the items after it
		}
		if isPlaceholder(t) {
			return
		}
		out = append(out, cases.Step{Text: txt(t)})
	}
	if len(s.rows) > 0 {
		ri := 0
		for _, head := range s.heads {
			col := actionColumn(head)
			// Rows of this table follow until the next table's rows.
			n := len(s.rows) - ri
			if len(s.heads) > 1 {
				n = 0
				for ri+n < len(s.rows) && len(s.rows[ri+n]) == len(head) {
					n++
				}
			}
			for _, r := range s.rows[ri : ri+n] {
				if col < len(r) {
					addStep(r[col])
				}
			}
			ri += n
		}
	}
	for _, it := range s.items {
		addStep(it)
	}
	if len(out) == 0 {
		for _, p := range s.paras {
			addStep(p)
		}
	}
	return out
}

// actionColumn picks the column of an action-item table that says what is
// to be done.
func actionColumn(head []string) int {
	for _, want := range []string{"action", "item", "task", "description", "what", "summary", "title", "remediation",
		"조치", "내용", "항목", "작업", "할 일", "대책"} {
		for i, h := range head {
			if strings.Contains(strings.ToLower(h), want) {
				return i
			}
		}
	}
	for i, h := range head {
		switch strings.ToLower(strings.TrimSpace(h)) {
		case "#", "id", "no", "no.", "번호", "ticket", "jira", "owner", "담당", "담당자", "status", "상태", "priority", "type", "due":
			continue
		}
		return i
	}
	return 0
}

// cleanTitle drops what export tools and templates put around a title:
// "Space : Page" from Confluence, "Postmortem:" prefixes.
func cleanTitle(t string) string {
	t = strings.TrimSpace(strings.ReplaceAll(t, "\n", " "))
	if _, after, ok := strings.Cut(t, " : "); ok && strings.TrimSpace(after) != "" {
		t = strings.TrimSpace(after)
	}
	lower := strings.ToLower(t)
	for _, p := range []string{"postmortem:", "post-mortem:", "post mortem:", "postmortem -", "post-mortem -", "incident postmortem:",
		"incident review:", "incident report:", "포스트모템:", "장애 보고서:", "장애 보고:", "장애 리포트:"} {
		if strings.HasPrefix(lower, p) && len(t) > len(p)+3 {
			t = strings.TrimSpace(t[len(p):])
			break
		}
	}
	return clip(t, 200)
}

// firstSentence is the first sentence of a text, shortened to its first
// clause when it is long, and to at most 120 characters.
func firstSentence(s string) string {
	s = oneLine(s)
	for i, r := range s {
		if (r == '.' || r == '!' || r == '?' || r == '。') && i > 10 {
			if next := s[i+utf8.RuneLen(r):]; next == "" || next[0] == ' ' {
				s = s[:i]
				break
			}
		}
	}
	if utf8.RuneCountInString(s) > 140 {
		if i := strings.Index(s, ", "); i > 30 {
			s = s[:i]
		}
	}
	return clip(s, 140)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip cuts s to at most n characters at a word boundary, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n]
	cut := string(r)
	if i := strings.LastIndexAny(cut, " \n"); i > n/2 {
		cut = cut[:i]
	}
	return strings.TrimSpace(cut) + "…"
}

// isKoreanDoc reports whether a document is written in Korean: a good share
// of its letters are Hangul (Korean write-ups quote English logs and names).
func isKoreanDoc(s string) bool {
	var hangul, latin int
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Hangul, r):
			hangul++
		case r < unicode.MaxASCII && unicode.IsLetter(r):
			latin++
		}
	}
	return hangul > 0 && hangul*3 >= latin
}

var (
	sentenceEnd = regexp.MustCompile(`[.!?。]\s+|\n+`)
	negatedEn   = regexp.MustCompile(`(?i)^\W*(no|nothing|none|neither)\b|\b(not|un)\s?affected\b|\bwas not lost\b|\bno data\b`)
	negatedKo   = regexp.MustCompile(`(없었다|없었음|없음|없다|영향 없)\W*$`)
)

// dropNegated leaves out of a text the sentences that say something did not
// happen ("No data was lost.", "데이터 손실은 없었다."), so that tag
// inference does not read them as having happened.
func dropNegated(text string) string {
	var out []string
	last := 0
	for _, m := range sentenceEnd.FindAllStringIndex(text+"\n", -1) {
		end := min(m[1], len(text))
		sent := text[last:end]
		last = end
		core := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(sent), "-*• "))
		if core == "" || negatedEn.MatchString(core) || negatedKo.MatchString(strings.TrimRight(core, ".! ")) {
			continue
		}
		out = append(out, strings.TrimSpace(sent))
	}
	return strings.Join(out, "\n")
}

// genericTitle reports whether a title only says what kind of document it
// is ("Postmortem", "Incident report", "장애 보고서").
func genericTitle(t string) bool {
	n := normHeading(cleanTitle(t))
	switch n {
	case "", "postmortem", "post-mortem", "post mortem", "incident postmortem", "incident post-mortem", "incident report",
		"incident review", "postmortem report", "post-incident review", "post incident review", "rca", "root cause analysis",
		"incident", "retrospective", "incident retrospective", "template", "postmortem template",
		"포스트모템", "장애 보고서", "장애 보고", "장애 리포트", "사후 분석", "장애 회고", "회고":
		return true
	}
	return false
}

// metaLabel reads a paragraph that states the document's title or date:
// "Title: ...", "Date: ...", "제목: ...", "발생 일시: ...".
func metaLabel(p string) (kind, value string, ok bool) {
	first, _, _ := strings.Cut(p, "\n")
	k, v, found := strings.Cut(first, ":")
	if !found || strings.TrimSpace(v) == "" {
		return "", "", false
	}
	switch normHeading(k) {
	case "title", "incident title", "제목", "장애명":
		return "title", strings.TrimSpace(v), true
	case "date", "incident date", "date of incident", "started", "start time", "일시", "발생 일시", "발생일", "장애 일시", "날짜":
		return "date", strings.TrimSpace(v), true
	}
	return "", "", false
}

// isPlaceholder reports whether text is what a template leaves where the
// writer had nothing to say.
func isPlaceholder(t string) bool {
	n := strings.ToLower(strings.Trim(strings.TrimSpace(t), "-–—*_.:()[]<> "))
	switch n {
	case "", "tbd", "tba", "n/a", "na", "none", "todo", "to do", "to-do", "...", "…", "없음", "해당 없음", "미정", "추후 작성":
		return true
	}
	return strings.HasPrefix(strings.TrimSpace(t), "<") && strings.HasSuffix(strings.TrimSpace(t), ">") && !strings.Contains(t, "</")
}

// shortLabel classifies a line that is only a section name: a few words,
// perhaps after a bullet or numbering, with no full stop.
func shortLabel(l string) field {
	l = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(l), ":："))
	if l == "" || len(strings.Fields(l)) > 4 || strings.HasSuffix(l, ".") || strings.HasSuffix(l, "다") {
		return fNone
	}
	return classify(l)
}

var bulletPrefix = regexp.MustCompile(`^\s*(?:[-*•·▪◦○●※]|\d{1,2}[.)])\s+`)

// linesToBlocks makes blocks of a paragraph's lines: bulleted lines become
// list items, the others one paragraph.
func linesToBlocks(lines []string) []block {
	var out []block
	var para []string
	var items []string
	flush := func() {
		if len(para) > 0 {
			out = append(out, block{kind: bPara, text: strings.Join(para, " ")})
			para = nil
		}
		if len(items) > 0 {
			out = append(out, block{kind: bList, items: items})
			items = nil
		}
	}
	for _, l := range lines {
		if m := bulletPrefix.FindString(l); m != "" {
			if len(para) > 0 {
				flush()
			}
			items = append(items, strings.TrimSpace(l[len(m):]))
			continue
		}
		if len(items) > 0 {
			flush()
		}
		para = append(para, strings.TrimSpace(l))
	}
	flush()
	return out
}
