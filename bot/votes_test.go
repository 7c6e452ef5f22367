package bot_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/internal/slackfake"
	"github.com/incidentbot/incidentbot/store"
	"github.com/incidentbot/incidentbot/store/sqlite"
)

// caseOrder lists the cases of a rendered reply, in order.
func caseOrder(c slackfake.Call) []string {
	var ids []string
	for _, b := range c.Blocks {
		id, _ := b["block_id"].(string)
		if strings.HasPrefix(id, "case:") && !strings.HasSuffix(id, ":actions") {
			ids = append(ids, strings.TrimPrefix(id, "case:"))
		}
	}
	return ids
}

// caseText is the text of a case's section in a rendered reply.
func caseText(c slackfake.Call, id string) string {
	for _, b := range c.Blocks {
		if b["block_id"] == "case:"+id {
			if t, ok := b["text"].(map[string]any); ok {
				s, _ := t["text"].(string)
				return s
			}
		}
	}
	return ""
}

// withStore runs replicas over one activity store, as cmd wires them:
// votes recorded into it, replies and shares kept in it, votes read back.
func withStore(st store.Store, owner string) func(*bot.Options) {
	return func(o *bot.Options) {
		o.State = storeState{Store: st, owner: owner}
		o.Recorder = storeRecorder{st, newRecorder()}
		o.Votes = st
	}
}

func openSQLite(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "activity.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// vote presses a vote button on a reply and waits for the bot to
// acknowledge it on the message: by then the vote is recorded.
func (h *harness) vote(user, channel string, reply slackfake.Call, action, caseID string) {
	h.t.Helper()
	h.ack(h.fake.SendInteractive(blockAction(user, channel, reply, action, caseID, "case:"+caseID+":actions")))
	if _, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool {
		return c.Method == "chat.update" && c.TS == reply.TS && strings.Contains(blocksText(c), "<@"+user+">")
	}); err != nil {
		h.t.Fatalf("vote by %s not acknowledged: %v", user, err)
	}
}

// answer sends a fixture event in channel and returns the bot's reply.
func (h *harness) answer(name, channel string) slackfake.Call {
	h.t.Helper()
	ev := h.event(name, channel)
	h.ack(h.fake.SendEvent(ev))
	return h.reply(ev)
}

// message sends a person's message in channel and returns the bot's reply.
func (h *harness) message(channel, text string) slackfake.Call {
	h.t.Helper()
	ev := h.event("chatter", channel)
	ev["text"] = text
	h.ack(h.fake.SendEvent(ev))
	return h.reply(ev)
}

// Texts that match the case the test library's Datadog alert leads with,
// told in other words than the alert's, so that a vote on the alert is not
// a vote on them. The alert (Postgres out of connection slots since a
// deploy) leads with the payments release that leaked connections, ahead
// of a comments table whose integer key ran out: both texts tell of the
// payments failing, not of the database.
const (
	paymentsEn = "Card payments failing since this morning's payments-api release, checkout keeps showing an error page"
	paymentsKo = "오늘 아침 payments-api 릴리스 이후 카드 결제가 계속 실패하고 결제 화면에 오류가 뜹니다"
)

// TestNotRelevantVoteStopsCaseLeading: a case voted not relevant on an
// alert no longer leads when the same alert fires again (in another
// channel), and the reply says why; messages not like the alert, whose
// answers hold the same case, are answered as before the vote.
func TestNotRelevantVoteStopsCaseLeading(t *testing.T) {
	fake := slackfake.New()
	t.Cleanup(fake.Close)
	fake.AddChannel("C0INC3", "inc-three", false)
	h := startWith(t, fake, withStore(openSQLite(t), "replica-a"))

	// Before any vote.
	en, ko := caseOrder(h.message(incChannel, paymentsEn)), caseOrder(h.message(incChannel, paymentsKo))
	first := h.answer("datadog", incChannel)
	base := caseOrder(first)
	if len(base) < 2 || !slices.Contains(en, base[0]) || !slices.Contains(ko, base[0]) {
		t.Fatalf("the test needs the alert's leading case in every answer: alert %v, others %v %v", base, en, ko)
	}
	voted := base[0]
	h.vote("U0VOTER", incChannel, first, "feedback_not_relevant", voted)

	again := h.answer("datadog", incChannel2)
	got := caseOrder(again)
	if len(got) == 0 || got[0] == voted {
		t.Fatalf("after a not-relevant vote on %s the same alert is answered %v; want it out of the lead", voted, got)
	}
	for _, id := range got {
		if !slices.Contains(base, id) {
			t.Errorf("the vote brought in %s, which the alert did not match before: %v -> %v", id, base, got)
		}
	}
	if slices.Contains(got, voted) && !strings.Contains(caseText(again, voted), "marked not relevant 1× for similar alerts") {
		t.Errorf("the voted case is shown without saying why it dropped:\n%s", caseText(again, voted))
	}

	// The messages are not like the alert: answered as before the vote,
	// with nothing said of votes.
	for _, tc := range []struct {
		text   string
		before []string
	}{{paymentsEn, en}, {paymentsKo, ko}} {
		c := h.message("C0INC3", tc.text)
		if !slices.Equal(caseOrder(c), tc.before) {
			t.Errorf("a vote on a dissimilar alert changed the answer to %q: %v -> %v", tc.text, tc.before, caseOrder(c))
		}
		if body := blocksText(c); strings.Contains(body, "비슷한 알림에서") || strings.Contains(body, "similar alerts") {
			t.Errorf("the answer to %q speaks of votes:\n%s", tc.text, body)
		}
	}
}

// TestHelpfulVoteLiftsCase: a case voted helpful on a text rises when the
// text comes again (in another channel), and the reply, in the text's
// language, says how many votes lifted it. Three people vote, as many as
// count (matcher.VoteCap, ×1.75), on the answer's second case, which
// scores close enough to the first for that to lift it (a case shown far
// below, at a third of the first, stays below however many vote).
func TestHelpfulVoteLiftsCase(t *testing.T) {
	for _, tc := range []struct {
		name, text, note string
	}{
		{"en", "", "marked helpful 3× for similar alerts"}, // the Datadog alert
		{"ko", "카프카 컨슈머 랙이 계속 늘고 알림 발송이 지연됩니다", "비슷한 알림에서 도움이 됨으로 3번 표시됨"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, withStore(openSQLite(t), "replica-a"))
			send := func(channel string) slackfake.Call {
				if tc.text == "" {
					return h.answer("datadog", channel)
				}
				return h.message(channel, tc.text)
			}
			first := send(incChannel)
			base := caseOrder(first)
			if len(base) < 2 {
				t.Fatalf("the test needs two cases in the answer: %v", base)
			}
			lifted := base[1]
			h.vote("U0ONE", incChannel, first, "feedback_helpful", lifted)
			h.vote("U0TWO", incChannel, first, "feedback_helpful", lifted)
			h.vote("U0THREE", incChannel, first, "feedback_helpful", lifted)

			again := send(incChannel2)
			got := caseOrder(again)
			if i := slices.Index(got, lifted); i < 0 || i >= slices.Index(base, lifted) {
				t.Fatalf("after helpful votes on %s the answer went %v -> %v; want it higher", lifted, base, got)
			}
			if !strings.Contains(caseText(again, lifted), tc.note) {
				t.Errorf("the lifted case does not say %q:\n%s", tc.note, caseText(again, lifted))
			}
		})
	}
}

// TestVotesReadFromStore: a replica that starts after votes were cast
// elsewhere reads them from the store: the votes of its workspace steer
// its replies, those of another workspace sharing the database do not.
func TestVotesReadFromStore(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.name, func(t *testing.T) {
			open := backend.open(t)
			fake := slackfake.New()
			t.Cleanup(fake.Close)
			a := startWith(t, fake, withStore(open(), "replica-a"))
			first := a.answer("datadog", incChannel)
			base := caseOrder(first)
			if len(base) < 2 {
				t.Fatalf("the test needs two cases in the answer: %v", base)
			}
			a.vote("U0VOTER", incChannel, first, "feedback_not_relevant", base[0])
			// Another workspace's votes on the same text, in the same
			// database: they must not reach this one.
			st := open()
			var query string
			if r, ok, err := st.GetReply(context.Background(), incChannel, first.ThreadTS); err != nil || !ok || !strings.Contains(r.Text, "refund-api") {
				t.Fatalf("the reply's text is not kept: %+v %v %v", r, ok, err)
			} else {
				query = r.Text
			}
			for i := range 3 {
				if _, err := st.RecordFeedback(context.Background(), store.Feedback{Time: time.Now().UTC(), Team: "T0ELSEWHERE",
					Channel: "C0THEIRS", Message: "1.1", User: fmt.Sprintf("U0THEM%d", i), CaseID: base[0], Vote: store.Helpful, Query: query}); err != nil {
					t.Fatal(err)
				}
			}

			// Replica b starts now, reads the votes, and gets the alert.
			b := startWith(t, fake, withStore(st, "replica-b"))
			if err := fake.WaitConnected(b.waitCtx(), 2); err != nil {
				t.Fatal(err)
			}
			ev := b.event("datadog", incChannel2)
			b.ack(fake.SendTo(1).SendEvent(ev))
			again := b.reply(ev)
			got := caseOrder(again)
			if len(got) == 0 || got[0] == base[0] {
				t.Errorf("a replica started after the vote answered %v; want %s out of the lead", got, base[0])
			}
			if strings.Contains(blocksText(again), "marked helpful") {
				t.Errorf("another workspace's votes steered the reply:\n%s", blocksText(again))
			}
		})
	}
}

// shareValueIn is the value of the "Share in thread" button in blocks.
func shareValueIn(blocks []map[string]any) string {
	for _, b := range blocks {
		if b["type"] != "actions" {
			continue
		}
		for _, e := range b["elements"].([]any) {
			if el := e.(map[string]any); el["action_id"] == "share_in_thread" {
				return el["value"].(string)
			}
		}
	}
	return ""
}

// sharePress is a press of "Share in thread" on a shortcut's private
// answer in channel.
func sharePress(user, channel, value, responseURL string) map[string]any {
	return map[string]any{
		"type": "block_actions", "user": map[string]any{"id": user}, "channel": map[string]any{"id": channel},
		"container":    map[string]any{"type": "message", "is_ephemeral": true, "channel_id": channel},
		"response_url": responseURL,
		"actions":      []any{map[string]any{"type": "button", "action_id": "share_in_thread", "block_id": "reply:actions", "value": value}},
	}
}

// TestButtonsOnAnotherReplica: Slack delivers a press to any replica.
// Show more pressed on a replica other than the one that replied shows the
// next cases for the thread's text, none of those already shown; Share in
// thread pressed on another replica than the one that answered the
// shortcut posts the answer in the thread.
func TestButtonsOnAnotherReplica(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.name, func(t *testing.T) {
			open := backend.open(t)
			fake := slackfake.New()
			t.Cleanup(fake.Close)
			// One case per reply, so that the alert has more to show.
			replica := func(owner string) *harness {
				return startWith(t, fake, func(o *bot.Options) { withStore(open(), owner)(o); o.Top = 1 })
			}
			a, b := replica("replica-a"), replica("replica-b")
			if err := fake.WaitConnected(a.waitCtx(), 2); err != nil {
				t.Fatal(err)
			}

			ev := a.event("opsgenie", incChannel)
			a.ack(fake.SendTo(0).SendEvent(ev))
			reply := a.reply(ev)
			shown := caseOrder(reply)
			// What the next cases are: the thread's text, as the replying
			// replica kept it, matched for three times as many (Top is 1),
			// less those shown.
			r, ok, err := open().GetReply(context.Background(), incChannel, ev["ts"].(string))
			if err != nil || !ok || !strings.Contains(r.Text, "Kafka consumer lag on notifications") {
				t.Fatalf("the reply's text is not kept: %+v %v %v", r, ok, err)
			}
			ans, err := testMatcher(t).Match(context.Background(), r.Text, 3)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, r := range ans.Results {
				if !slices.Contains(shown, r.Case.ID) {
					want = append(want, r.Case.ID)
				}
			}
			if len(want) == 0 {
				t.Fatalf("the alert has no more cases than the %d shown; the test needs some", len(shown))
			}
			b.ack(fake.SendTo(1).SendInteractive(blockAction("U0CURIOUS", incChannel, reply, "show_more", "more", "reply:actions")))
			more, err := fake.WaitCall(b.waitCtx(), func(c slackfake.Call) bool {
				return c.Method == "chat.postEphemeral" && c.Form.Get("user") == "U0CURIOUS"
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := caseOrder(more); !slices.Equal(got, want) {
				t.Errorf("show more on the other replica showed %v (%s); want %v", got, blocksText(more), want)
			}

			sc := a.event("pagerduty", otherChannel)
			a.ack(fake.SendTo(0).SendInteractive(map[string]any{
				"type": "message_action", "callback_id": bot.ShortcutID, "trigger_id": "trig-x",
				"user": map[string]any{"id": "U0ASKER"}, "channel": map[string]any{"id": otherChannel, "name": "general"}, "message": sc,
			}))
			eph, err := fake.WaitCall(a.waitCtx(), func(c slackfake.Call) bool {
				return c.Method == "chat.postEphemeral" && c.Channel == otherChannel
			})
			if err != nil {
				t.Fatal(err)
			}
			value := shareValueIn(eph.Blocks)
			if value == "" {
				t.Fatalf("no share button:\n%s", blocksText(eph))
			}
			b.ack(fake.SendTo(1).SendInteractive(sharePress("U0ASKER", otherChannel, value, fake.ResponseURL())))
			if posted := b.reply(sc); !slices.Equal(caseOrder(posted), caseOrder(eph)) {
				t.Errorf("shared %v in the thread; the private answer had %v", caseOrder(posted), caseOrder(eph))
			}
		})
	}
}

// TestShareWhereNotMember: the shortcut works in a channel the bot has not
// joined, but sharing there cannot: the asker is told so, and what to do,
// instead of nothing happening.
func TestShareWhereNotMember(t *testing.T) {
	for _, private := range []bool{false, true} {
		t.Run(fmt.Sprintf("private %v", private), func(t *testing.T) {
			fake := slackfake.New()
			t.Cleanup(fake.Close)
			const outside = "C0OUTSIDE"
			fake.AddChannel(outside, "random", private)
			fake.SetMember(outside, false)
			h := startWith(t, fake, nil)
			sc := h.event("pagerduty", outside)
			h.ack(fake.SendInteractive(map[string]any{
				"type": "message_action", "callback_id": bot.ShortcutID, "trigger_id": "trig-out", "response_url": fake.ResponseURL(),
				"user": map[string]any{"id": "U0ASKER"}, "channel": map[string]any{"id": outside, "name": "random"}, "message": sc,
			}))
			// Slack refuses the ephemeral post there; the answer comes back
			// through the response URL.
			answer, err := fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "response_url" })
			if err != nil {
				t.Fatal(err)
			}
			value := shareValueIn(answer.Blocks)
			if value == "" {
				t.Fatalf("no share button:\n%s", blocksText(answer))
			}
			h.ack(fake.SendInteractive(sharePress("U0ASKER", outside, value, fake.ResponseURL())))
			told, err := fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool {
				return c.Method == "response_url" && strings.Contains(blocksText(c), "not a member")
			})
			if err != nil {
				t.Fatalf("the asker was not told the answer could not be shared: %v", err)
			}
			if body := blocksText(told); !strings.Contains(body, "<#"+outside+">") || !strings.Contains(body, "/invite") {
				t.Errorf("the message does not say where and what to do:\n%s", body)
			}
			for _, c := range fake.Calls("response_url") {
				if c.DeleteOriginal || c.ReplaceOriginal {
					t.Errorf("the private answer was replaced or deleted although it was not shared: %+v", c)
				}
			}
			h.barrier()
			if n := h.repliesIn(sc); n != 0 {
				t.Errorf("%d posts tried in a channel the bot is not in: a failed post leaves the thread marked as being answered", n)
			}
		})
	}
}

// shareDown is a State whose shares cannot be read back.
type shareDown struct{ bot.State }

func (shareDown) GetShare(context.Context, string) (store.Share, bool, error) {
	return store.Share{}, false, errors.New("database is down")
}

// TestShareWhenStateFails: when the shared state cannot give the answer
// back, the asker keeps it, with its button, and is told to press again.
func TestShareWhenStateFails(t *testing.T) {
	h := start(t, func(o *bot.Options) { o.State = shareDown{bot.NewMemState()} })
	sc := h.event("pagerduty", otherChannel)
	h.ack(h.fake.SendInteractive(map[string]any{
		"type": "message_action", "callback_id": bot.ShortcutID, "trigger_id": "trig-down",
		"user": map[string]any{"id": "U0ASKER"}, "channel": map[string]any{"id": otherChannel, "name": "general"}, "message": sc,
	}))
	eph, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "chat.postEphemeral" })
	if err != nil {
		t.Fatal(err)
	}
	h.ack(h.fake.SendInteractive(sharePress("U0ASKER", otherChannel, shareValueIn(eph.Blocks), h.fake.ResponseURL())))
	told, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "response_url" })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(blocksText(told), "press *Share in thread* again") || told.ReplaceOriginal || told.DeleteOriginal {
		t.Errorf("answered %+v:\n%s", told, blocksText(told))
	}
}
