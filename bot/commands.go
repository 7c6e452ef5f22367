package bot

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/store"
)

// maxAckPayload is Slack's limit on a Socket Mode ack, less a margin.
const maxAckPayload = 19 << 10

// slashDeadline is how long an answer may take before the ack goes out
// without it; Slack allows three seconds.
const slashDeadline = 2500 * time.Millisecond

// goLimited runs work on a goroutine of its own, beside the queue, when
// fewer than MaxCommands such runs are going, and reports whether it did.
// A panic in work is counted, logged with msg, and then handed to
// recovered to answer for the work.
func (b *Bot) goLimited(msg string, work, recovered func()) bool {
	select {
	case b.slashSem <- struct{}{}:
	default:
		return false
	}
	go func() {
		defer func() { <-b.slashSem }()
		defer func() {
			if r := recover(); r != nil {
				b.m.panics.Inc()
				b.log.Error(msg, "err", r)
				if recovered != nil {
					recovered()
				}
			}
		}()
		work()
	}()
	return true
}

// onSlashCommand answers /incidents in its ack, from a goroutine so the
// event loop never waits on matching. Should the answer take longer than the
// deadline, the ack says so and the answer follows through response_url.
func (b *Bot) onSlashCommand(ctx context.Context, req *socketmode.Request) {
	var cmd slack.SlashCommand
	if err := json.Unmarshal(req.Payload, &cmd); err != nil {
		b.ack(ctx, req, nil)
		b.log.Warn("slash command payload not understood", "envelope_id", req.EnvelopeID, "err", err)
		return
	}
	// Each command takes two goroutines (the answer, and the wait for it
	// against Slack's deadline) for up to 30 s: bound how many run, so that
	// a flood of commands cannot pile them up.
	started := b.goLimited("recovered from a panic in a slash command", func() {
		done := make(chan map[string]any, 1)
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		go func() { done <- b.slashAnswer(actx, cmd) }()
		timer := time.NewTimer(slashDeadline)
		defer timer.Stop()
		select {
		case payload := <-done:
			if payload == nil {
				b.ack(ctx, req, nil) // answered otherwise (a modal)
				return
			}
			b.ack(ctx, req, payload)
		case <-timer.C:
			lang := b.langOf(cmd.Text, matcher.DetectLang(cmd.Text))
			b.ack(ctx, req, ephemeralPayload(renderText(say(lang, "searching"))))
			payload := <-done
			if payload != nil && cmd.ResponseURL != "" {
				blocks, _ := payload["blocks"].([]slack.Block)
				text, _ := payload["text"].(string)
				if err := b.post.respond(actx, cmd.ResponseURL, blocks, text); err != nil {
					b.log.Warn("late slash answer failed", "err", err)
				}
			}
		}
	}, func() {
		b.ack(ctx, req, ephemeralPayload(renderText(say(b.opts.DefaultLang, "error"))))
	})
	if !started {
		b.m.suppressed.WithLabelValues("commands_busy").Inc()
		b.log.Warn("too many slash commands at once; answered busy", "max", cap(b.slashSem))
		lang := b.langOf(cmd.Text, matcher.DetectLang(cmd.Text))
		b.ack(ctx, req, ephemeralPayload(renderText(say(lang, "busy"))))
	}
}

func ephemeralPayload(blocks []slack.Block, text string) map[string]any {
	return map[string]any{"response_type": "ephemeral", "text": text, "blocks": blocks}
}

// slashAnswer computes the answer to /incidents as an ack payload.
func (b *Bot) slashAnswer(ctx context.Context, cmd slack.SlashCommand) map[string]any {
	sub, rest, _ := strings.Cut(strings.TrimSpace(cmd.Text), " ")
	rest = strings.TrimSpace(rest)
	lang := b.langOf(cmd.Text, matcher.DetectLang(cmd.Text))
	switch strings.ToLower(sub) {
	case "similar", "match", "비슷한":
		if rest == "" {
			return ephemeralPayload(renderText(helpText(lang, "similar")))
		}
		ans, err := b.match(ctx, cmd.ChannelID, rest, b.opts.Top)
		if err != nil {
			b.log.Error("slash similar failed", "err", err)
			return ephemeralPayload(renderText(say(lang, "error")))
		}
		b.recordCommand(cmd, ans, lang)
		return b.resultsPayload(ans, lang)
	case "search", "검색":
		if rest == "" {
			return ephemeralPayload(renderText(helpText(lang, "search")))
		}
		ans, err := b.searcher().SearchWith(ctx, rest, b.opts.Top+hiddenSlack, matcher.MatchOptions{Channel: cmd.ChannelID})
		if err != nil {
			// Filter mistakes come back as errors that say what to write.
			return ephemeralPayload(renderText(":warning: " + escape(err.Error())))
		}
		ans = b.visible(ctx, cmd.ChannelID, ans, b.opts.Top)
		return b.resultsPayload(ans, lang)
	case "show", "보기":
		id := strings.Fields(rest)
		if len(id) == 0 {
			return ephemeralPayload(renderText(helpText(lang, "show")))
		}
		return b.showPayload(ctx, cmd, id, lang)
	case "capture", "기록", "저장":
		return b.capturePayload(ctx, cmd, lang)
	case "digest", "다이제스트":
		return b.digestPayload(ctx, cmd.ChannelID, lang)
	case "help", "도움말", "":
		return ephemeralPayload(renderText(helpText(lang, "")))
	default:
		return ephemeralPayload(renderText(say(lang, "unknown_sub", escape(sub)) + "\n\n" + helpText(lang, "")))
	}
}

// showPayload shows one case in full; a team case comes with Edit and
// Delete buttons, and one captured in a private channel only there.
func (b *Bot) showPayload(ctx context.Context, cmd slack.SlashCommand, id []string, lang cases.Lang) map[string]any {
	c, ok := b.searcher().CaseIn(id[0], cmd.ChannelID)
	team := false
	if b.opts.TeamCases != nil && strings.HasPrefix(id[0], TeamCasePrefix) {
		_, tc, found, err := b.teamCase(ctx, id[0])
		switch {
		case err != nil:
			b.log.Warn("reading a team case failed", "case_id", id[0], "err", err)
			if ok {
				ok = b.visibleIn(ctx, cmd.ChannelID, id[0])
			}
		case found:
			c, ok, team = tc, true, true
		}
	}
	if !ok || !b.visibleIn(ctx, cmd.ChannelID, id[0]) {
		return ephemeralPayload(renderText(say(lang, "unknown_case", id[0])))
	}
	if len(id) > 1 && (id[1] == "ko" || id[1] == "en") {
		lang = cases.Lang(id[1])
	}
	blocks, fallback := renderCase(c, b.opts.Taxonomy, lang)
	if team {
		blocks = append(blocks, teamCaseActions(c.ID, lang))
	}
	p := fitPayload(ephemeralPayload(blocks, fallback))
	if team {
		// The buttons are what the user came for: keep them when the case
		// had to be cut to fit.
		if bs, _ := p["blocks"].([]slack.Block); len(bs) < len(blocks) {
			p["blocks"] = append(bs[:len(bs)-1:len(bs)-1], teamCaseActions(c.ID, lang))
		}
	}
	return p
}

// capturePayload starts a capture from /incidents capture: the loading
// modal opens within the trigger window, and the draft follows. It
// returns nil when the modal is the answer.
func (b *Bot) capturePayload(ctx context.Context, cmd slack.SlashCommand, lang cases.Lang) map[string]any {
	if b.opts.TeamCases == nil {
		return ephemeralPayload(renderText(capturePhrases.say(lang, "not_set")))
	}
	v, err := b.openLoading(ctx, cmd.TriggerID)
	if err != nil {
		b.log.Warn("capture: opening the modal failed", "channel", cmd.ChannelID, "err", err)
		return ephemeralPayload(renderText(capturePhrases.say(lang, "expired")))
	}
	b.goCapture(func(ctx context.Context) { b.fillCapture(ctx, v, cmd.ChannelID, "") }, func() {
		wctx, cancel := context.WithTimeout(context.Background(), viewOpenTimeout)
		defer cancel()
		_, _ = b.api.UpdateViewContext(wctx, messageView(lang, say(lang, "busy")), "", v.Hash, v.ID)
	})
	return nil
}

func (b *Bot) resultsPayload(ans *matcher.Answer, lang cases.Lang) map[string]any {
	if len(ans.Results) == 0 {
		return ephemeralPayload(renderText(say(lang, "none")))
	}
	return fitPayload(ephemeralPayload(renderReply(ans.Results, lang, replyOptions{library: b.opts.PublicURL})))
}

// fitPayload drops blocks from the end until the ack is under Slack's size
// limit.
func fitPayload(p map[string]any) map[string]any {
	for {
		data, _ := json.Marshal(p)
		blocks, _ := p["blocks"].([]slack.Block)
		if len(data) <= maxAckPayload || len(blocks) <= 1 {
			return p
		}
		p["blocks"] = blocks[:len(blocks)-1]
	}
}

func (b *Bot) recordCommand(cmd slack.SlashCommand, ans *matcher.Answer, lang cases.Lang) {
	if len(ans.Results) == 0 {
		return
	}
	private := strings.HasPrefix(cmd.ChannelID, "G") || cmd.ChannelName == "privategroup" || cmd.ChannelName == "directmessage"
	b.record(answer{channel: cmd.ChannelID, private: private, source: store.SourceCommand,
		key: "cmd:" + cmd.TriggerID}, ans, lang)
}

var help = map[cases.Lang]map[string]string{
	cases.English: {
		"": "*incidentbot: have we, or anyone, seen this before?*\n" +
			"`/incidents similar <text>`: past incidents like an alert or symptom you paste\n" +
			"`/incidents search <words> [symptom:high-latency] [component:cdn] [root_cause:config-change] [org:cloudflare] [since:2023]`: look up cases\n" +
			"`/incidents show <case id> [en|ko]`: one case in full (a team case with Edit and Delete)\n" +
			"`/incidents capture`: in an incident channel, save the incident as a team case (or use the *Save as incident case* shortcut on a message)\n" +
			"`/incidents digest`: this channel's weekly digest so far\n" +
			"`/incidents help`: this help\n" +
			"In incident channels I reply in thread to alerts and messages that look like a past incident. Mention me with text, or in a thread, to ask.",
		"similar": "Paste what you see: `/incidents similar p99 latency up and 502s from the load balancer`",
		"search":  "Give words or filters: `/incidents search dns component:dns-resolver since:2022`",
		"show":    "Give a case id: `/incidents show cloudflare-2019-07-02`",
	},
	cases.Korean: {
		"": "*incidentbot: 우리나 누군가 이런 장애를 겪은 적이 있을까?*\n" +
			"`/incidents similar <내용>`: 붙여 넣은 알림이나 증상과 비슷한 과거 장애\n" +
			"`/incidents search <검색어> [symptom:high-latency] [component:cdn] [root_cause:config-change] [org:kakao] [since:2023]`: 사례 검색\n" +
			"`/incidents show <사례 id> [en|ko]`: 사례 전체 보기 (팀 사례는 고치기와 삭제 가능)\n" +
			"`/incidents capture`: 장애 채널에서 이번 장애를 팀 사례로 저장 (메시지의 *Save as incident case* 바로가기도 가능)\n" +
			"`/incidents digest`: 이 채널의 이번 주 다이제스트\n" +
			"`/incidents help`: 도움말\n" +
			"장애 채널에서는 과거 장애와 비슷한 알림과 메시지에 스레드로 답합니다. 내용과 함께 멘션하거나 스레드에서 멘션해 물어볼 수 있습니다.",
		"similar": "보이는 증상을 붙여 넣어 주세요: `/incidents similar 배포 후 결제 API 502 급증`",
		"search":  "검색어나 필터를 주세요: `/incidents search dns component:dns-resolver since:2022`",
		"show":    "사례 id 를 주세요: `/incidents show kakao-2022-10-15`",
	},
}

func helpText(lang cases.Lang, topic string) string {
	if h, ok := help[lang]; ok {
		return h[topic]
	}
	return help[cases.English][topic]
}
