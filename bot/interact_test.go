package bot_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/internal/slackfake"
	"github.com/incidentbot/incidentbot/store"
)

func TestSlashCommandAnswersInAck(t *testing.T) {
	h := start(t, nil)
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"similar pods OOMKilled and in CrashLoopBackOff after the update", []string{"tl-010", `"response_type":"ephemeral"`}},
		{"show tl-002", []string{"expired certificate", "tl-002"}},
		{"show tl-002 ko", []string{"인증서"}},
		{"search component:relational-database since:2020", []string{"tl-0"}},
		{"search symptom:not-a-symptom", []string{"no such symptom"}},
		{"show no-such-case", []string{"There is no case"}},
		{"", []string{"/incidents similar"}},
		{"help", []string{"/incidents search"}},
		{"frobnicate things", []string{"I don't know `frobnicate`", "/incidents similar"}},
		{"similar 결제 API 커넥션 풀 고갈로 타임아웃", []string{"비슷한 과거 장애"}},
	} {
		t.Run(tc.text, func(t *testing.T) {
			id := h.fake.SendSlashCommand(map[string]string{"command": "/incidents", "text": tc.text,
				"user_id": "U0ASKER", "channel_id": incChannel, "channel_name": "inc-checkout", "trigger_id": "T" + tc.text})
			payload := string(h.ack(id))
			if len(payload) > 20<<10 {
				t.Errorf("ack payload is %d bytes, over Slack's 20 KB", len(payload))
			}
			for _, w := range tc.want {
				if !strings.Contains(payload, w) {
					t.Errorf("ack lacks %q:\n%.600s", w, payload)
				}
			}
		})
	}
}

// interactive builds a block_actions payload for a button on a message.
func blockAction(user, channel string, msg slackfake.Call, actionID, value, blockID string) map[string]any {
	return map[string]any{
		"type":      "block_actions",
		"user":      map[string]any{"id": user},
		"channel":   map[string]any{"id": channel},
		"container": map[string]any{"type": "message", "message_ts": msg.TS, "channel_id": channel},
		"message":   map[string]any{"type": "message", "ts": msg.TS, "thread_ts": msg.ThreadTS, "text": msg.Text, "blocks": msg.Blocks},
		"actions":   []any{map[string]any{"type": "button", "action_id": actionID, "block_id": blockID, "value": value}},
	}
}

func TestFeedbackButtonsAcknowledgedAndRecorded(t *testing.T) {
	h := start(t, nil)
	ev := h.event("alertmanager", incChannel)
	h.ack(h.fake.SendEvent(ev))
	reply := h.reply(ev)

	h.ack(h.fake.SendInteractive(blockAction("U0VOTER", incChannel, reply, "feedback_not_relevant", "tl-010", "case:tl-010:actions")))
	upd, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "chat.update" && c.TS == reply.TS })
	if err != nil {
		t.Fatalf("vote not acknowledged on the message: %v", err)
	}
	if !strings.Contains(blocksText(upd), "marked not relevant by <@U0VOTER>") {
		t.Errorf("update lacks the note:\n%s", blocksText(upd))
	}
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	if len(h.rec.feedback) != 1 {
		t.Fatalf("recorded %d votes", len(h.rec.feedback))
	}
	f := h.rec.feedback[0]
	if f.CaseID != "tl-010" || f.Vote != store.NotRelevant || f.User != "U0VOTER" || f.Channel != incChannel || f.Message != reply.TS || !strings.Contains(f.Query, "KubePodCrashLooping") {
		t.Errorf("vote recorded as %+v", f)
	}
	if len(h.rec.suggestions) != 1 || h.rec.suggestions[0].Source != store.SourceAlert || h.rec.suggestions[0].Cases[0].CaseID != "tl-010" {
		t.Errorf("suggestions recorded: %+v", h.rec.suggestions)
	}
}

func TestShowMoreIsPrivate(t *testing.T) {
	h := start(t, nil)
	ev := h.event("korean", incChannel)
	h.ack(h.fake.SendEvent(ev))
	reply := h.reply(ev)
	h.ack(h.fake.SendInteractive(blockAction("U0CURIOUS", incChannel, reply, "show_more", "more", "reply:actions")))
	c, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "chat.postEphemeral" })
	if err != nil {
		t.Fatal(err)
	}
	if c.Form.Get("user") != "U0CURIOUS" || c.ThreadTS != ev["ts"] {
		t.Errorf("show more went to user %q thread %q", c.Form.Get("user"), c.ThreadTS)
	}
	if strings.Contains(blocksText(c), `"case:tl-001"`) {
		t.Error("show more repeated a case already in the reply")
	}
}

func TestShortcutAnswersPrivatelyAndShares(t *testing.T) {
	h := start(t, nil)
	ev := h.event("pagerduty", otherChannel) // shortcuts work outside incident channels too
	id := h.fake.SendInteractive(map[string]any{
		"type":        "message_action",
		"callback_id": bot.ShortcutID,
		"trigger_id":  "trig-1",
		"user":        map[string]any{"id": "U0ASKER"},
		"channel":     map[string]any{"id": otherChannel, "name": "general"},
		"message":     ev,
	})
	h.ack(id)
	eph, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "chat.postEphemeral" })
	if err != nil {
		t.Fatal(err)
	}
	body := blocksText(eph)
	if !strings.Contains(body, "tl-002") || !strings.Contains(body, "share_in_thread") {
		t.Fatalf("shortcut answer:\n%s", body)
	}
	// Press "Share in thread".
	var share string
	for _, b := range eph.Blocks {
		if b["type"] != "actions" {
			continue
		}
		for _, e := range b["elements"].([]any) {
			el := e.(map[string]any)
			if el["action_id"] == "share_in_thread" {
				share = el["value"].(string)
			}
		}
	}
	press := map[string]any{
		"type":         "block_actions",
		"user":         map[string]any{"id": "U0ASKER"},
		"channel":      map[string]any{"id": otherChannel},
		"container":    map[string]any{"type": "message", "is_ephemeral": true, "channel_id": otherChannel},
		"response_url": h.fake.ResponseURL(),
		"actions":      []any{map[string]any{"type": "button", "action_id": "share_in_thread", "block_id": "reply:actions", "value": share}},
	}
	h.ack(h.fake.SendInteractive(press))
	posted := h.reply(ev)
	if !strings.Contains(blocksText(posted), "tl-002") {
		t.Errorf("shared reply:\n%s", blocksText(posted))
	}
}

func TestThreadKeepsOneReplyAndUpdatesIt(t *testing.T) {
	h := start(t, nil)
	root := h.event("chatter", incChannel)
	root["text"] = "checkout is failing for some users"
	h.ack(h.fake.SendEvent(root))
	// A follow-up in the thread with a clear signal.
	f1 := h.event("chatter", incChannel)
	f1["text"] = "pods are OOMKilled and in CrashLoopBackOff, memory limit 6Gi"
	f1["thread_ts"] = root["ts"]
	h.ack(h.fake.SendEvent(f1))
	first := h.reply(root)
	// More detail that changes the best match: an expired certificate.
	f2 := h.event("chatter", incChannel)
	f2["text"] = "wait, the real error is x509: certificate has expired calling billing.internal, mTLS failing everywhere"
	f2["thread_ts"] = root["ts"]
	h.ack(h.fake.SendEvent(f2))
	if _, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "chat.update" && c.TS == first.TS }); err != nil {
		t.Fatalf("reply not updated: %v", err)
	}
	if n := h.repliesIn(root); n != 1 {
		t.Errorf("%d replies in one thread, want 1", n)
	}
}

func TestMentionAnswersThreadRoot(t *testing.T) {
	h := start(t, nil)
	root := h.event("alertmanager", otherChannel) // not an incident channel: no automatic reply
	h.ack(h.fake.SendEvent(root))
	mention := map[string]any{"type": "app_mention", "user": "U0ASKER", "text": "<@" + h.fake.Identity().UserID + ">",
		"channel": otherChannel, "ts": "1732879999.000100", "thread_ts": root["ts"]}
	h.ack(h.fake.SendEvent(mention))
	c := h.reply(root)
	if !strings.Contains(blocksText(c), "tl-010") {
		t.Errorf("mention in thread answered with:\n%s", blocksText(c))
	}
	// A mention with text answers for the text.
	m2 := map[string]any{"type": "app_mention", "user": "U0ASKER", "text": "<@" + h.fake.Identity().UserID + "> kafka consumer lag keeps growing and the group keeps rebalancing",
		"channel": otherChannel, "ts": "1732880000.000100"}
	h.ack(h.fake.SendEvent(m2))
	c2 := h.reply(m2)
	if !strings.Contains(blocksText(c2), "tl-005") {
		t.Errorf("mention with text answered with:\n%s", blocksText(c2))
	}
}

func TestEditUpdatesOnlyWhenMatchesChange(t *testing.T) {
	h := start(t, nil)
	ev := h.event("alertmanager", incChannel)
	h.ack(h.fake.SendEvent(ev))
	reply := h.reply(ev)
	edit := func(text string) string {
		msg := map[string]any{"type": "message", "user": "U0PERSON", "text": text, "ts": ev["ts"]}
		return h.fake.SendEvent(map[string]any{"type": "message", "subtype": "message_changed", "hidden": true,
			"channel": incChannel, "channel_type": "channel", "ts": "1732890000.000001", "message": msg,
			"previous_message": map[string]any{"type": "message", "text": "old", "ts": ev["ts"]}})
	}
	h.ack(edit("x509: certificate has expired on billing.internal; mTLS handshakes fail from every client"))
	if _, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "chat.update" && c.TS == reply.TS }); err != nil {
		t.Fatalf("edit with new matches did not update the reply: %v", err)
	}
	if n := h.repliesIn(ev); n != 1 {
		t.Errorf("%d replies after an edit", n)
	}
}

func TestBadTokensStopAtStart(t *testing.T) {
	for _, tc := range []struct{ app, botTok, want string }{
		{"", "xoxb-1", "SLACK_APP_TOKEN is not set"},
		{"xoxb-1", "xoxb-1", "SLACK_APP_TOKEN does not start with xapp-"},
		{"xapp-1", "", "SLACK_BOT_TOKEN is not set"},
		{"xapp-1", "xapp-2", "SLACK_BOT_TOKEN does not start with xoxb-"},
	} {
		_, err := bot.New(testMatcher(t), bot.Options{AppToken: tc.app, BotToken: tc.botTok})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q, %q) = %v, want %q", tc.app, tc.botTok, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "xoxb-1") || strings.Contains(err.Error(), "xapp-2")) {
			t.Errorf("error echoes a token: %v", err)
		}
	}
}

var _ = json.Marshal

func TestOrphanedShortcutTakenOver(t *testing.T) {
	ev := map[string]any{"type": "message", "user": "U0PERSON", "ts": "1732880000.000100", "channel": otherChannel,
		"text": "x509: certificate has expired calling billing.internal, mTLS handshakes failing"}
	payload, _ := json.Marshal(map[string]any{"type": "message_action", "callback_id": bot.ShortcutID, "trigger_id": "trig-dead",
		"user": map[string]any{"id": "U0ASKER"}, "channel": map[string]any{"id": otherChannel}, "message": ev})
	inbox := &memInbox{seen: map[string]bool{}, done: map[string]bool{},
		orphaned: []store.InboxItem{{Key: "ia:trig-dead", Kind: "interactive", Payload: payload}}}
	h := start(t, func(o *bot.Options) { o.Inbox = inbox; o.OrphanEvery = 50 * time.Millisecond })
	c, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "chat.postEphemeral" })
	if err != nil {
		t.Fatal(err)
	}
	if c.Form.Get("user") != "U0ASKER" || !strings.Contains(blocksText(c), "tl-002") {
		t.Errorf("taken-over shortcut answered %q with\n%s", c.Form.Get("user"), blocksText(c))
	}
	// A press recorded before its ack is not handled twice.
	id := h.fake.SendInteractive(map[string]any{"type": "message_action", "callback_id": bot.ShortcutID, "trigger_id": "trig-live",
		"user": map[string]any{"id": "U0ASKER"}, "channel": map[string]any{"id": otherChannel}, "message": ev})
	h.ack(id)
	inbox.mu.Lock()
	defer inbox.mu.Unlock()
	if !inbox.seen["ia:trig-live"] {
		t.Error("the shortcut was not recorded in the inbox before its ack")
	}
}
