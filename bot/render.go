package bot

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// Slack's limits on a message (docs.slack.dev block kit reference).
const (
	maxBlocks      = 50
	maxSectionText = 3000
	maxHeaderText  = 150
	maxButtonValue = 2000
)

// Action ids of the buttons the bot renders.
const (
	actionHelpful     = "feedback_helpful"
	actionNotRelevant = "feedback_not_relevant"
	actionShowMore    = "show_more"
	actionShare       = "share_in_thread"
)

// phrases are the bot's words in each language.
var phrases = phrasebook{
	cases.English: {
		"heading":      ":mag: Similar past incidents",
		"fallback":     "Similar past incidents: %s",
		"why":          "Why",
		"symptoms":     "symptoms",
		"components":   "components",
		"terms":        "words",
		"helped":       "What they did",
		"suggested":    "Suggested (not stated by them)",
		"lesson":       "Lesson",
		"helpful":      "Helpful",
		"not_relevant": "Not relevant",
		"show_more":    "Show more",
		"share":        "Share in thread",
		"marked_h":     "marked helpful by <@%s>",
		"marked_n":     "marked not relevant by <@%s>",
		"none":         "No past incident is similar enough to suggest.",
		"no_more":      "No more similar cases.",
		"more_heading": ":mag: More similar incidents",
		"score":        "match %d%%",
		"in_library":   "in the library",
		"shared":       "<@%s> shared similar past incidents",
		"thanks":       "Thanks, noted.",
		"unknown_case": "There is no case %q. Try `/incidents search <words>` to find one.",
		"no_thread":    "I have not seen the start of this thread. Mention me with the symptoms, e.g. `@incidentbot 502s from the edge after a deploy`.",
		"error":        "Something went wrong while searching; the error is logged. Please try again.",
		"unknown_sub":  "I don't know `%s`.",
		"searching":    "Searching…",
		"busy":         "Too many searches are running right now; please try again in a few seconds.",
		"expired":      "This answer has expired; run the shortcut again.",
		"share_error":  "I could not read this answer back to share it; the error is logged. Please press *Share in thread* again.",
		"not_member":   "I could not share this in <#%s>: I am not a member of that channel. Invite me with `/invite <@%s>` and press *Share in thread* again.",
		"votes_h":      "marked helpful %d× for similar alerts",
		"votes_n":      "marked not relevant %d× for similar alerts",
		"no_digests":   "Weekly digests are not set up. Start the bot with --digest CHANNEL to post one.",
		"home_heading": "This week so far",
		"next_digest":  "Next digests",
	},
	cases.Korean: {
		"heading":      ":mag: 비슷한 과거 장애",
		"fallback":     "비슷한 과거 장애: %s",
		"why":          "매칭 이유",
		"symptoms":     "증상",
		"components":   "구성 요소",
		"terms":        "일치한 단어",
		"helped":       "그들이 한 조치",
		"suggested":    "제안 (당사자가 밝힌 조치 아님)",
		"lesson":       "교훈",
		"helpful":      "도움이 됨",
		"not_relevant": "관련 없음",
		"show_more":    "더 보기",
		"share":        "스레드에 공유",
		"marked_h":     "<@%s> 님이 도움이 됨으로 표시했습니다",
		"marked_n":     "<@%s> 님이 관련 없음으로 표시했습니다",
		"none":         "제안할 만큼 비슷한 과거 장애가 없습니다.",
		"no_more":      "더 비슷한 사례가 없습니다.",
		"more_heading": ":mag: 비슷한 장애 더 보기",
		"score":        "일치도 %d%%",
		"in_library":   "라이브러리에서 보기",
		"shared":       "<@%s> 님이 비슷한 과거 장애를 공유했습니다",
		"thanks":       "감사합니다. 기록했습니다.",
		"unknown_case": "%q 사례가 없습니다. `/incidents search <검색어>` 로 찾아 보세요.",
		"no_thread":    "이 스레드의 첫 메시지를 보지 못했습니다. 증상을 함께 적어 멘션해 주세요. 예: `@incidentbot 배포 후 502 급증`",
		"error":        "검색 중 오류가 났습니다. 오류는 기록했습니다. 다시 시도해 주세요.",
		"unknown_sub":  "`%s` 는 모르는 명령입니다.",
		"searching":    "찾는 중입니다…",
		"busy":         "지금 검색이 너무 많이 진행 중입니다. 몇 초 뒤에 다시 시도해 주세요.",
		"expired":      "이 답변은 만료됐습니다. 바로가기를 다시 실행해 주세요.",
		"share_error":  "공유할 답변을 읽지 못했습니다. 오류는 기록했습니다. *스레드에 공유* 를 다시 눌러 주세요.",
		"not_member":   "<#%s> 채널에 공유하지 못했습니다. 봇이 이 채널의 멤버가 아닙니다. `/invite <@%s>` 로 초대한 뒤 *스레드에 공유* 를 다시 눌러 주세요.",
		"votes_h":      "비슷한 알림에서 도움이 됨으로 %d번 표시됨",
		"votes_n":      "비슷한 알림에서 관련 없음으로 %d번 표시됨",
		"no_digests":   "주간 다이제스트가 설정되지 않았습니다. --digest CHANNEL 로 봇을 시작하면 게시합니다.",
		"home_heading": "이번 주 지금까지",
		"next_digest":  "다음 다이제스트",
	},
}

// phrasebook holds phrases by language and key; English stands in for a
// language it lacks.
type phrasebook map[cases.Lang]map[string]string

// say returns the phrase key in lang, formatted with args when there are
// any.
func (b phrasebook) say(lang cases.Lang, key string, args ...any) string {
	p, ok := b[lang]
	if !ok {
		p = b[cases.English]
	}
	if len(args) > 0 {
		return fmt.Sprintf(p[key], args...)
	}
	return p[key]
}

// say returns a phrase of the replies.
func say(lang cases.Lang, key string, args ...any) string { return phrases.say(lang, key, args...) }

// escape makes text safe inside Slack mrkdwn.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// linkURL returns u ready to stand in a mrkdwn link <URL|label>, or ""
// when it must not be linked: only absolute http and https URLs with a
// host are. The characters that would end the URL or start the label are
// percent-encoded, so a source URL cannot replace its link's label.
func linkURL(u string) string {
	u = strings.TrimSpace(u)
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return ""
	}
	for _, r := range u {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return ""
		}
	}
	return strings.NewReplacer("|", "%7C", "<", "%3C", ">", "%3E", "&", "&amp;").Replace(u)
}

// sourceLink links an already escaped label to the case's first source,
// when that source may be linked.
func sourceLink(c *cases.Case, label string) string {
	if len(c.Sources) > 0 {
		if u := linkURL(c.Sources[0].URL); u != "" {
			return "<" + u + "|" + label + ">"
		}
	}
	return label
}

// clip shortens s to at most n characters, ending with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, clip(s, maxSectionText), false, false)
}

func plain(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
}

// replyOptions say what a rendered reply carries.
type replyOptions struct {
	feedback bool   // Helpful / Not relevant buttons per case
	showMore bool   // a Show more button
	share    string // value of a Share in thread button, if any
	heading  string // phrase key of the heading
	library  string // public URL of the library page; each case links there when set
}

// renderReply renders matched cases as Block Kit, with a plain-text
// fallback. It stays within Slack's limits for any input.
func renderReply(results []matcher.Result, lang cases.Lang, o replyOptions) ([]slack.Block, string) {
	heading := o.heading
	if heading == "" {
		heading = "heading"
	}
	blocks := []slack.Block{slack.NewSectionBlock(mrkdwn("*"+say(lang, heading)+"*"), nil, nil)}
	var titles []string
	for _, r := range results {
		if len(blocks)+6 > maxBlocks {
			break
		}
		blocks = append(blocks, slack.NewDividerBlock())
		blocks = append(blocks, caseBlocks(r, lang, o.feedback, o.library)...)
		titles = append(titles, escape(r.Case.Title.In(lang)))
	}
	var actions []slack.BlockElement
	if o.showMore {
		actions = append(actions, slack.NewButtonBlockElement(actionShowMore, "more", plain(say(lang, "show_more"))))
	}
	if o.share != "" && len(o.share) <= maxButtonValue {
		b := slack.NewButtonBlockElement(actionShare, o.share, plain(say(lang, "share")))
		b.Style = slack.StylePrimary
		actions = append(actions, b)
	}
	if len(actions) > 0 {
		blocks = append(blocks, slack.NewActionBlock("reply:actions", actions...))
	}
	fallback := clip(say(lang, "fallback", strings.Join(titles, "; ")), 3000)
	return blocks, fallback
}

// caseBlocks renders one case: title linked to its source, org and date,
// why it matched, what helped and the lesson, and the feedback buttons.
func caseBlocks(r matcher.Result, lang cases.Lang, feedback bool, library string) []slack.Block {
	c := r.Case
	title := sourceLink(c, escape(clip(c.Title.In(lang), 300)))
	meta := []string{escape(c.Org), c.Date, say(lang, "score", int(r.Score*100+0.5))}
	if u := libraryURL(library, c.ID, lang); u != "" {
		meta = append(meta, fmt.Sprintf("<%s|%s>", escape(u), say(lang, "in_library")))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%s*\n%s", title, strings.Join(nonEmpty(meta), " · "))
	if why := whyText(r, lang); why != "" {
		fmt.Fprintf(&b, "\n_%s:_ %s", say(lang, "why"), why)
	}
	if votes := votesText(r.Votes, lang); votes != "" {
		fmt.Fprintf(&b, "\n:ballot_box_with_ballot: %s", votes)
	}
	blocks := []slack.Block{slack.NewSectionBlock(mrkdwn(b.String()), nil, nil, slack.SectionBlockOptionBlockID("case:"+c.ID))}

	var detail strings.Builder
	// Only steps the organisation stated are quoted as what it did; a case
	// with none shows the writer's suggestion under its own heading.
	did, suggested := splitSteps(c.Remediation)
	heading, steps := "helped", did
	if len(did) == 0 {
		heading, steps = "suggested", suggested
	}
	if n := min(len(steps), 2); n > 0 {
		fmt.Fprintf(&detail, "*%s*", say(lang, heading))
		for _, s := range steps[:n] {
			fmt.Fprintf(&detail, "\n• %s", escape(clip(s.Text.In(lang), 600)))
		}
	}
	if !c.Lessons.Empty() {
		if detail.Len() > 0 {
			detail.WriteString("\n")
		}
		fmt.Fprintf(&detail, "*%s*\n%s", say(lang, "lesson"), escape(clip(c.Lessons.In(lang), 900)))
	}
	if detail.Len() > 0 {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(detail.String()), nil, nil))
	}
	if feedback {
		blocks = append(blocks, slack.NewActionBlock("case:"+clip(c.ID, 200)+":actions",
			slack.NewButtonBlockElement(actionHelpful, c.ID, plain(say(lang, "helpful"))),
			slack.NewButtonBlockElement(actionNotRelevant, c.ID, plain(say(lang, "not_relevant"))),
		))
	}
	return blocks
}

// libraryURL is the page of a case in the library served by incidentbot
// serve (or run --api-addr) under its public URL; "" without one.
func libraryURL(public, id string, lang cases.Lang) string {
	if public == "" {
		return ""
	}
	u := strings.TrimRight(public, "/") + "/cases/" + url.PathEscape(id)
	if lang == cases.Korean {
		u += "?lang=ko"
	}
	return u
}

func whyText(r matcher.Result, lang cases.Lang) string {
	var parts []string
	labels := func(ts []matcher.Tag) string {
		var ls []string
		for _, t := range ts {
			ls = append(ls, escape(t.Label))
		}
		return strings.Join(ls, ", ")
	}
	if len(r.Symptoms) > 0 {
		parts = append(parts, say(lang, "symptoms")+" "+labels(r.Symptoms))
	}
	if len(r.Components) > 0 {
		parts = append(parts, say(lang, "components")+" "+labels(r.Components))
	}
	if len(r.Terms) > 0 {
		terms := r.Terms
		if len(terms) > 5 {
			terms = terms[:5]
		}
		parts = append(parts, say(lang, "terms")+" "+escape(strings.Join(terms, ", ")))
	}
	return strings.Join(parts, " · ")
}

// votesText says which votes on similar alerts moved a case.
func votesText(v matcher.Boost, lang cases.Lang) string {
	var parts []string
	if v.Helpful > 0 {
		parts = append(parts, say(lang, "votes_h", v.Helpful))
	}
	if v.NotRelevant > 0 {
		parts = append(parts, say(lang, "votes_n", v.NotRelevant))
	}
	return strings.Join(parts, " · ")
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

// renderText renders a short message as one section.
func renderText(text string) ([]slack.Block, string) {
	return []slack.Block{slack.NewSectionBlock(mrkdwn(text), nil, nil)}, clip(text, 3000)
}

// renderCase renders one case in full, for /incidents show.
func renderCase(c *cases.Case, tax labeler, lang cases.Lang) ([]slack.Block, string) {
	title := sourceLink(c, escape(c.Title.In(lang)))
	blocks := []slack.Block{
		slack.NewSectionBlock(mrkdwn(fmt.Sprintf("*%s*\n%s · %s · `%s`", title, escape(c.Org), c.Date, escape(c.ID))), nil, nil),
	}
	add := func(heading string, text string) {
		if strings.TrimSpace(text) != "" {
			blocks = append(blocks, slack.NewSectionBlock(mrkdwn("*"+heading+"*\n"+escape(text)), nil, nil))
		}
	}
	add(casePhrases.say(lang, "summary"), c.Summary.In(lang))
	add(casePhrases.say(lang, "symptoms"), c.SymptomsText.In(lang))
	var tags []string
	for _, s := range c.Symptoms {
		tags = append(tags, tax.Label(cases.KindSymptom, s, lang))
	}
	for _, s := range c.Components {
		tags = append(tags, tax.Label(cases.KindComponent, s, lang))
	}
	if c.RootCause != "" {
		tags = append(tags, tax.Label(cases.KindRootCause, c.RootCause, lang))
	}
	add(casePhrases.say(lang, "tags"), strings.Join(tags, ", ")) // add escapes
	did, suggested := splitSteps(c.Remediation)
	add(say(lang, "helped"), bullets(did, lang))
	add(say(lang, "suggested"), bullets(suggested, lang))
	actDid, actSuggested := splitSteps(c.ActionItems)
	add(casePhrases.say(lang, "actions"), bullets(actDid, lang))
	add(casePhrases.say(lang, "actions")+" · "+say(lang, "suggested"), bullets(actSuggested, lang))
	add(say(lang, "lesson"), c.Lessons.In(lang))
	return blocks, clip(escape(c.Title.In(lang)), 3000)
}

var casePhrases = phrasebook{
	cases.English: {"summary": "Summary", "symptoms": "What responders saw", "tags": "Tags", "actions": "Action items"},
	cases.Korean:  {"summary": "요약", "symptoms": "대응자가 본 증상", "tags": "태그", "actions": "후속 조치"},
}

// labeler gives tag labels; *cases.Taxonomy implements it.
type labeler interface {
	Label(kind cases.Kind, id string, lang cases.Lang) string
}

// splitSteps separates the steps the organisation stated from the ones the
// case writer suggested.
func splitSteps(steps []cases.Step) (stated, suggested []cases.Step) {
	for _, s := range steps {
		if s.IsStated() {
			stated = append(stated, s)
		} else {
			suggested = append(suggested, s)
		}
	}
	return stated, suggested
}

func bullets(steps []cases.Step, lang cases.Lang) string {
	var lines []string
	for _, s := range steps {
		lines = append(lines, "• "+s.Text.In(lang))
	}
	return strings.Join(lines, "\n")
}
