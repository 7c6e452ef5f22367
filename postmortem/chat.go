package postmortem

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/incidentbot/incidentbot/cases"
)

// ChatFormat is the Format of a draft read from a chat.
const ChatFormat Format = "chat"

// ChatMessage is one message of an incident channel, as the caller read it
// from the chat: the package knows no chat service.
type ChatMessage struct {
	At     time.Time
	Author string // who wrote it (an id or a name)
	Bot    bool   // an integration posted it: alerts come this way
	Text   string // all the text it carries
	Link   string // a link to the message, for the draft to cite
	// Marked says that people marked the message as the fix: a check mark
	// reaction, or a pin.
	Marked bool
	Reply  bool // a reply in a thread
}

// Chat is an incident channel's history.
type Chat struct {
	Channel  string // the channel's name, without '#'
	Topic    string
	Purpose  string
	Messages []ChatMessage // in any order
}

// Kinds of ChatEvent.
const (
	EventAlert     = "alert"     // the first alert, or the first message
	EventDeclared  = "declared"  // someone declared the incident
	EventMitigated = "mitigated" // the harm stopped growing
	EventResolved  = "resolved"  // the incident was over
	EventLast      = "last"      // the last message, when nothing said resolved
)

// ChatEvent is one point of the incident's timeline, found in a message.
type ChatEvent struct {
	Kind string
	At   time.Time
	Text string // the message's first line
	Link string
}

// ChatDraft is a case drafted from an incident channel's history, with the
// timeline it was read from.
type ChatDraft struct {
	*Draft
	Lang     cases.Lang
	Timeline []ChatEvent
}

// Limits on what a chat draft quotes.
const (
	maxChatSteps   = 8    // remediation steps and action items, each
	maxChatStep    = 400  // characters of a quoted step
	maxChatSymptom = 1500 // characters of the symptoms text
	maxChatText    = 30000
)

var (
	declaredWords  = []string{"declar", "sev1", "sev2", "sev-1", "sev-2", "sev 1", "sev 2", "incident commander", "opening an incident", "opened an incident", "장애 선언", "선언", "장애 등급", "대응 시작"}
	mitigatedWords = []string{"mitigat", "recovering", "error rate dropping", "errors dropping", "back down", "완화", "회복 중", "줄어들"}
	resolvedChat   = []string{"resolved", "all clear", "back to normal", "fully recovered", "recovered", "incident closed", "closing the incident",
		"복구", "해소", "정상화", "정상으로", "종료"}
	notYet     = []string{"not resolved", "not yet", "isn't resolved", "still", "unresolved", "아직", "안 됨", "안됨", "미해결"}
	fixWords   = []string{"fixed by", "fixed with", "fixed it", "the fix", "rolled back", "rollback", "roll back", "reverted", "revert ", "failed over", "restarted", "롤백", "되돌", "재시작", "조치", "수정 배포"}
	causeWords = []string{"root cause", "caused by", "the cause", "because of", "원인"}
	alertWords = []string{"[firing", "firing", "alert", "triggered", "critical", "[alerting", "알림", "경보"}
)

var (
	actionMarker = regexp.MustCompile(`(?i)^\W*(todo|to-do|follow[- ]?up|action item|ai)\b\W*|^\W*(후속\s*조치|후속|할\s*일)\s*[:：)\]-]\s*`)
	actionInline = regexp.MustCompile(`(?i)\b(todo|follow[- ]?up)\s*[:：-]\s*`)
	alertPrefix  = regexp.MustCompile(`(?i)^\W*\[(firing|alerting|triggered|resolved|ok)(:\d+)?\]\s*`)
	chatMention  = regexp.MustCompile(`<[@#!][^>]*>`)
	chatLink     = regexp.MustCompile(`<(https?://[^|>]*)(\|([^>]*))?>`)
)

// FromChat drafts a case from an incident channel's history:
//   - the title from the channel's topic or purpose, else its first alert;
//   - the summary and timeline from the first alert (or message), the
//     message that declared the incident, the first that says it is
//     mitigated and the last that says it is resolved (or the last message);
//   - what helped from the messages people marked as the fix and those that
//     say what fixed it ("fixed by", "rolled back");
//   - the root cause from the messages that name it ("root cause", "원인");
//   - action items from "TODO" and "follow-up" lines;
//   - each quoted step links to its message.
//
// The draft is in Korean when the people in the channel wrote Korean. It has
// no tags: Text is what the caller infers them from.
func FromChat(ch Chat) *ChatDraft {
	msgs := make([]ChatMessage, 0, len(ch.Messages))
	for _, m := range ch.Messages {
		m.Text = cleanChat(m.Text)
		if m.Text == "" {
			continue
		}
		msgs = append(msgs, m)
	}
	slices.SortStableFunc(msgs, func(a, b ChatMessage) int { return a.At.Compare(b.At) })

	var human strings.Builder
	for _, m := range msgs {
		if !m.Bot && human.Len() < maxChatText {
			human.WriteString(m.Text)
			human.WriteByte('\n')
		}
	}
	lang := cases.English
	probe := human.String()
	if strings.TrimSpace(probe) == "" {
		probe = ch.Topic + "\n" + ch.Purpose
		for _, m := range msgs {
			probe += "\n" + m.Text
		}
	}
	if isKoreanDoc(probe) {
		lang = cases.Korean
	}
	in := func(s string) cases.Text {
		if lang == cases.Korean {
			return cases.Text{Ko: s}
		}
		return cases.Text{En: s}
	}

	c := &cases.Case{Review: cases.Review{WrittenBy: "capture"}, SymptomsTextKind: cases.SymptomsReported}
	d := &ChatDraft{Draft: &Draft{Case: c}, Lang: lang}

	// Timeline.
	start := -1
	for i, m := range msgs {
		if m.Bot && !m.Reply && hasAny(m.Text, alertWords) {
			start = i
			break
		}
	}
	if start < 0 {
		for i, m := range msgs {
			if !m.Reply && hasAny(m.Text, alertWords) {
				start = i
				break
			}
		}
	}
	if start < 0 && len(msgs) > 0 {
		start = 0
	}
	event := func(kind string, m ChatMessage) ChatEvent {
		return ChatEvent{Kind: kind, At: m.At, Text: clip(firstLine(m.Text), 200), Link: m.Link}
	}
	var resolvedAt time.Time
	if start >= 0 {
		first := msgs[start]
		d.Timeline = append(d.Timeline, event(EventAlert, first))
		c.Date = first.At.UTC().Format(time.DateOnly)
		for _, m := range msgs[start+1:] {
			if !m.Bot && hasAny(m.Text, declaredWords) {
				d.Timeline = append(d.Timeline, event(EventDeclared, m))
				break
			}
		}
		for _, m := range msgs[start+1:] {
			if hasAny(m.Text, mitigatedWords) && !hasAny(m.Text, notYet) {
				d.Timeline = append(d.Timeline, event(EventMitigated, m))
				break
			}
		}
		end := -1
		for i := len(msgs) - 1; i > start; i-- {
			if hasAny(msgs[i].Text, resolvedChat) && !hasAny(msgs[i].Text, notYet) {
				end = i
				break
			}
		}
		if end >= 0 {
			d.Timeline = append(d.Timeline, event(EventResolved, msgs[end]))
			resolvedAt = msgs[end].At
		} else if last := len(msgs) - 1; last > start {
			d.Timeline = append(d.Timeline, event(EventLast, msgs[last]))
		}
		if !resolvedAt.IsZero() && resolvedAt.After(first.At) {
			dur := duration(resolvedAt.Sub(first.At))
			c.Timeline.ResolvedAfter = &dur
		}
	}

	// Title: the topic, the purpose, the first alert, the channel.
	for _, t := range []string{ch.Topic, ch.Purpose} {
		if t = strings.TrimSpace(cleanChat(t)); t != "" && !genericTitle(t) {
			c.Title = in(clip(firstLine(t), 150))
			break
		}
	}
	if c.Title.Empty() && start >= 0 {
		c.Title = in(clip(alertTitle(msgs[start].Text), 150))
	}
	if c.Title.Empty() && ch.Channel != "" {
		c.Title = in(clip(ch.Channel, 150))
	}

	// What responders saw: the distinct alerts, then the first words of
	// the people who answered them.
	var seen []string
	var symptoms []string
	for _, m := range msgs {
		if !m.Bot || !hasAny(m.Text, alertWords) || len(symptoms) >= 4 {
			continue
		}
		t := alertTitle(m.Text)
		if slices.Contains(seen, t) {
			continue
		}
		seen = append(seen, t)
		symptoms = append(symptoms, clip(oneLine(m.Text), 400))
	}
	if len(symptoms) == 0 && start >= 0 {
		symptoms = append(symptoms, clip(oneLine(msgs[start].Text), 400))
	}
	c.SymptomsText = in(clip(strings.Join(symptoms, "\n"), maxChatSymptom))
	if start >= 0 {
		c.Detection = in(clip(oneLine(msgs[start].Text), 300))
	}

	// What helped, the cause and the follow-ups.
	var causes []string
	for i, m := range msgs {
		if i == start && m.Bot {
			continue
		}
		if items := actionItems(m.Text); len(items) > 0 {
			for _, it := range items {
				if len(c.ActionItems) < maxChatSteps {
					c.ActionItems = append(c.ActionItems, cases.Step{Text: in(clip(it, maxChatStep)), Source: m.Link})
				}
			}
			if !m.Marked {
				continue
			}
		}
		if !m.Bot && hasAny(m.Text, causeWords) && len(causes) < 3 {
			causes = append(causes, clip(oneLine(m.Text), maxChatStep))
		}
		if (m.Marked || !m.Bot && hasAny(m.Text, fixWords)) && len(c.Remediation) < maxChatSteps {
			c.Remediation = append(c.Remediation, cases.Step{Text: in(clip(oneLine(m.Text), maxChatStep)), Source: m.Link})
		}
	}
	if len(causes) > 0 {
		c.Trigger = in(strings.Join(causes, "\n"))
	}
	c.Summary = in(chatSummary(d.Timeline, c, lang))

	var text strings.Builder
	for _, t := range []cases.Text{c.Title, c.SymptomsText, c.Trigger} {
		text.WriteString(t.In(lang) + "\n")
	}
	for _, s := range c.Remediation {
		text.WriteString(s.Text.In(lang) + "\n")
	}
	for _, m := range msgs {
		if text.Len() >= maxChatText {
			break
		}
		if !m.Bot && hasAny(m.Text, harmWords) {
			text.WriteString(m.Text + "\n")
		}
	}
	d.Text = dropNegated(cutText(text.String(), maxChatText))
	d.Format = ChatFormat
	d.inventory()
	return d
}

// chatSummary writes the timeline as a sentence or two.
func chatSummary(tl []ChatEvent, c *cases.Case, lang cases.Lang) string {
	if len(tl) == 0 {
		return ""
	}
	clock := func(t time.Time) string { return t.UTC().Format("15:04") }
	var parts []string
	first := tl[0]
	if lang == cases.Korean {
		parts = append(parts, fmt.Sprintf("%s %s UTC에 %q(으)로 시작", first.At.UTC().Format(time.DateOnly), clock(first.At), clip(alertTitle(first.Text), 120)))
	} else {
		parts = append(parts, fmt.Sprintf("Began with %q at %s UTC on %s", clip(alertTitle(first.Text), 120), clock(first.At), first.At.UTC().Format(time.DateOnly)))
	}
	words := map[cases.Lang]map[string]string{
		cases.English: {EventDeclared: "declared at %s", EventMitigated: "mitigated at %s", EventResolved: "resolved at %s", EventLast: "last message at %s"},
		cases.Korean:  {EventDeclared: "%s 장애 선언", EventMitigated: "%s 완화", EventResolved: "%s 복구", EventLast: "%s 마지막 메시지"},
	}[lang]
	for _, e := range tl[1:] {
		parts = append(parts, fmt.Sprintf(words[e.Kind], clock(e.At)))
	}
	s := strings.Join(parts, ", ")
	if d := c.Timeline.ResolvedAfter; d != nil {
		if lang == cases.Korean {
			s += fmt.Sprintf(" (첫 알림 후 %s)", d.String())
		} else {
			s += fmt.Sprintf(" (%s after the first alert)", d.String())
		}
	}
	s += "."
	if len(c.Remediation) > 0 {
		if lang == cases.Korean {
			s += " 조치: " + clip(c.Remediation[0].Text.In(lang), 200)
		} else {
			s += " What helped: " + clip(c.Remediation[0].Text.In(lang), 200)
		}
	}
	return s
}

// actionItems returns the follow-ups a message lists: its lines that begin
// with TODO, follow-up or 후속, or the rest of a line after "TODO:".
func actionItems(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(bulletPrefix.ReplaceAllString(l, ""))
		var item string
		if m := actionMarker.FindStringIndex(l); m != nil {
			item = l[m[1]:]
		} else if m := actionInline.FindStringIndex(l); m != nil {
			item = l[m[1]:]
		} else {
			continue
		}
		if item = strings.TrimSpace(item); item != "" && !isPlaceholder(item) {
			out = append(out, item)
		}
	}
	return out
}

// alertTitle is an alert's first line without its status prefix.
func alertTitle(s string) string {
	return strings.TrimSpace(alertPrefix.ReplaceAllString(firstLine(s), ""))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(l)
}

// cleanChat makes chat text plain: valid UTF-8 without control characters,
// links as their labels, mentions dropped.
func cleanChat(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\ufeff' {
			return -1
		}
		return r
	}, s)
	s = chatLink.ReplaceAllStringFunc(s, func(l string) string {
		m := chatLink.FindStringSubmatch(l)
		if m[3] != "" {
			return m[3]
		}
		return m[1]
	})
	s = chatMention.ReplaceAllString(s, "")
	s = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
	return strings.TrimSpace(cutText(s, 40000))
}

// cutText cuts s to at most n bytes on a character boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
