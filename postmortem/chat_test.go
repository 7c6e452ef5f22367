package postmortem_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/postmortem"
)

var t0 = time.Date(2026, 3, 4, 14, 2, 0, 0, time.UTC)

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

func msg(min int, text string) postmortem.ChatMessage {
	return postmortem.ChatMessage{At: at(min), Author: "U1", Text: text, Link: "https://x.slack.com/archives/C1/p" + strings.Repeat("1", min+1)}
}

func alert(min int, text string) postmortem.ChatMessage {
	m := msg(min, text)
	m.Bot = true
	return m
}

func kinds(tl []postmortem.ChatEvent) string {
	var ks []string
	for _, e := range tl {
		ks = append(ks, e.Kind+"@"+e.At.Format("15:04"))
	}
	return strings.Join(ks, " ")
}

func TestFromChat(t *testing.T) {
	marked := msg(20, "Rolled back checkout-api to v41, error rate dropping")
	marked.Marked = true
	pinned := msg(25, "pinned: traffic shifted back to us-east-1 pool B")
	pinned.Marked = true
	for _, tc := range []struct {
		name       string
		chat       postmortem.Chat
		lang       cases.Lang
		title      string
		timeline   string
		helped     []string
		actions    []string
		cause      string
		resolvedIn string
	}{
		{
			name: "topic, alert, fix marked, resolved",
			chat: postmortem.Chat{Channel: "inc-checkout", Topic: "Checkout 502s after deploy <https://status.example.com|status>", Messages: []postmortem.ChatMessage{
				msg(40, "resolved, error rates back to baseline. TODO: add a canary stage for checkout-api"),
				alert(0, "[FIRING:1] CheckoutHigh5xx checkout-api 502 rate above 5%"),
				msg(3, "looking <@U2>"),
				msg(5, "declaring SEV2, I'm incident commander"),
				marked,
				pinned,
				msg(30, "root cause: the new connection pool setting in v42"),
				msg(41, "follow-up: alert on pool saturation"),
			}},
			lang:       cases.English,
			title:      "Checkout 502s after deploy status",
			timeline:   "alert@14:02 declared@14:07 mitigated@14:22 resolved@14:42",
			helped:     []string{"Rolled back checkout-api to v41, error rate dropping", "pinned: traffic shifted back to us-east-1 pool B"},
			actions:    []string{"add a canary stage for checkout-api", "alert on pool saturation"},
			cause:      "root cause: the new connection pool setting in v42",
			resolvedIn: "40m",
		},
		{
			name: "Korean, no topic: title from the alert, last message ends it",
			chat: postmortem.Chat{Channel: "inc-payments", Messages: []postmortem.ChatMessage{
				alert(0, "[FIRING:2] 결제 승인 API 지연 p99 3초 초과"),
				msg(2, "확인 중입니다. 장애 선언합니다"),
				msg(10, "원인은 DB 커넥션 풀 고갈로 보입니다"),
				msg(12, "커넥션 풀 늘리고 재시작했습니다"),
				msg(15, "후속 조치: 커넥션 풀 사용률 알림 추가"),
				msg(18, "지표 지켜보는 중"),
			}},
			lang:     cases.Korean,
			title:    "결제 승인 API 지연 p99 3초 초과",
			timeline: "alert@14:02 declared@14:04 last@14:20",
			helped:   []string{"커넥션 풀 늘리고 재시작했습니다"},
			actions:  []string{"커넥션 풀 사용률 알림 추가"},
			cause:    "원인은 DB 커넥션 풀 고갈로 보입니다",
		},
		{
			name: "no alert: the first message starts it; not resolved is not resolved",
			chat: postmortem.Chat{Channel: "inc-dns", Purpose: "DNS lookups failing in prod", Messages: []postmortem.ChatMessage{
				msg(0, "seeing SERVFAIL from resolvers"),
				msg(5, "still not resolved"),
				msg(9, "fixed by restarting coredns on the bad node"),
				msg(10, "all good now, resolved"),
			}},
			lang:       cases.English,
			title:      "DNS lookups failing in prod",
			timeline:   "alert@14:02 resolved@14:12",
			helped:     []string{"fixed by restarting coredns on the bad node"},
			resolvedIn: "10m",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := postmortem.FromChat(tc.chat)
			c := d.Case
			if d.Lang != tc.lang {
				t.Errorf("lang %s, want %s", d.Lang, tc.lang)
			}
			if got := c.Title.In(tc.lang); got != tc.title {
				t.Errorf("title %q, want %q", got, tc.title)
			}
			if tc.lang == cases.Korean && c.Title.Ko == "" {
				t.Errorf("Korean chat drafted in English: %+v", c.Title)
			}
			if got := kinds(d.Timeline); got != tc.timeline {
				t.Errorf("timeline %s, want %s", got, tc.timeline)
			}
			var helped, actions []string
			for _, s := range c.Remediation {
				helped = append(helped, s.Text.In(tc.lang))
				if !strings.HasPrefix(s.Source, "https://") {
					t.Errorf("step %q has no link to its message", s.Text.In(tc.lang))
				}
			}
			for _, s := range c.ActionItems {
				actions = append(actions, s.Text.In(tc.lang))
			}
			if strings.Join(helped, "|") != strings.Join(tc.helped, "|") {
				t.Errorf("what helped %q, want %q", helped, tc.helped)
			}
			if strings.Join(actions, "|") != strings.Join(tc.actions, "|") {
				t.Errorf("action items %q, want %q", actions, tc.actions)
			}
			if got := c.Trigger.In(tc.lang); got != tc.cause {
				t.Errorf("cause %q, want %q", got, tc.cause)
			}
			got := ""
			if c.Timeline.ResolvedAfter != nil {
				got = c.Timeline.ResolvedAfter.String()
			}
			if got != tc.resolvedIn {
				t.Errorf("resolved after %q, want %q", got, tc.resolvedIn)
			}
			if c.Date != "2026-03-04" {
				t.Errorf("date %q", c.Date)
			}
			if c.Summary.Empty() || !strings.Contains(c.Summary.In(tc.lang), "14:02") {
				t.Errorf("summary %q does not give the start", c.Summary.In(tc.lang))
			}
			checkChatDraft(t, d)
		})
	}
}

// checkChatDraft checks what must hold for any chat: the draft is valid
// text within its limits and a case the library accepts once given an id.
func checkChatDraft(t *testing.T, d *postmortem.ChatDraft) {
	t.Helper()
	c := *d.Case
	c.ID = "team-test"
	texts := []string{c.Title.En, c.Title.Ko, c.Summary.En, c.Summary.Ko, c.SymptomsText.En, c.SymptomsText.Ko, c.Trigger.En, c.Trigger.Ko, d.Text}
	for _, s := range append(c.Remediation, c.ActionItems...) {
		texts = append(texts, s.Text.En, s.Text.Ko)
		if utf8.RuneCountInString(s.Text.In(d.Lang)) > 401 {
			t.Errorf("step of %d characters", utf8.RuneCountInString(s.Text.In(d.Lang)))
		}
	}
	for _, s := range texts {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			t.Errorf("text is not clean UTF-8: %q", s)
		}
	}
	if utf8.RuneCountInString(c.Title.In(d.Lang)) > 151 {
		t.Errorf("title of %d characters", utf8.RuneCountInString(c.Title.In(d.Lang)))
	}
	if len(c.Remediation) > 8 || len(c.ActionItems) > 8 {
		t.Errorf("%d steps, %d action items", len(c.Remediation), len(c.ActionItems))
	}
	for _, p := range cases.Validate(&c, cases.DefaultTaxonomy()) {
		if p.Severity == cases.Error && !(c.Summary.Empty() && c.SymptomsText.Empty() && p.Field == "symptoms_text") && !(c.Title.Empty() && p.Field == "title") {
			t.Errorf("invalid draft: %s", p)
		}
	}
}

func TestFromChatOddInput(t *testing.T) {
	huge := strings.Repeat("TODO: 원인 resolved ✅ rolled back 🔥 ", 20000)
	var many []postmortem.ChatMessage
	for i := range 500 {
		m := msg(i, "rolled back thing "+strings.Repeat("x", i))
		m.Marked = true
		many = append(many, m)
	}
	for _, tc := range []struct {
		name string
		chat postmortem.Chat
	}{
		{"empty", postmortem.Chat{}},
		{"empty with a channel", postmortem.Chat{Channel: "inc-x"}},
		{"only blanks", postmortem.Chat{Messages: []postmortem.ChatMessage{msg(0, "  "), msg(1, "\n\t")}}},
		{"only bots", postmortem.Chat{Messages: []postmortem.ChatMessage{alert(0, "[FIRING:1] DiskFull"), alert(5, "[RESOLVED] DiskFull")}}},
		{"huge message", postmortem.Chat{Messages: []postmortem.ChatMessage{msg(0, huge), alert(1, huge)}}},
		{"many marked", postmortem.Chat{Messages: many}},
		{"odd unicode", postmortem.Chat{Topic: "\x00\xff\xfe", Messages: []postmortem.ChatMessage{
			msg(0, "\u202e\u200b\ufeff\u2028 resolved \xc3\x28 zalgo z̷̢̛a̸l̴g̵o̶ 🧨"), msg(1, "TODO:"), msg(2, "TODO: \x00"),
			msg(3, strings.Repeat("가", 5000)+"\xed\xa0\x80")}}},
		{"same time", postmortem.Chat{Messages: []postmortem.ChatMessage{{Text: "alert"}, {Text: "resolved"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := postmortem.FromChat(tc.chat)
			checkChatDraft(t, d)
		})
	}
}

func FuzzFromChat(f *testing.F) {
	f.Add("[FIRING:1] x", "resolved ✅", "TODO: y", "inc-a", true)
	f.Add("", "", "", "", false)
	f.Add("후속 조치: 알림", "원인: 배포", "복구", "장애", false)
	f.Fuzz(func(t *testing.T, a, b, c, topic string, marked bool) {
		m := msg(1, b)
		m.Marked = marked
		d := postmortem.FromChat(postmortem.Chat{Topic: topic, Messages: []postmortem.ChatMessage{alert(0, a), m, msg(2, c)}})
		checkChatDraft(t, d)
	})
}
