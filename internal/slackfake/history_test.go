package slackfake_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/incidentbot/incidentbot/internal/slackfake"
)

func TestHistoryRepliesPinsAndPermalinks(t *testing.T) {
	fake := newFake(t)
	fake.AddChannel("C1", "inc-a", false)
	fake.SetChannelTopic("C1", "Checkout down", "Incident room")
	api := newAPI(fake)
	ctx := testCtx(t)

	var tss []string
	for i := range 25 {
		tss = append(tss, fake.AddMessage("C1", map[string]any{"user": "U1", "text": fmt.Sprintf("m%d", i)}))
	}
	fake.AddMessage("C1", map[string]any{"user": "U2", "text": "in thread", "thread_ts": tss[3],
		"reactions": []any{map[string]any{"name": "white_check_mark", "count": 1, "users": []any{"U3"}}}})
	fake.Pin("C1", tss[5])
	_, posted, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("bot says", false), slack.MsgOptionTS(tss[3]))
	if err != nil {
		t.Fatal(err)
	}

	info, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "C1"})
	if err != nil || info.Topic.Value != "Checkout down" || info.Purpose.Value != "Incident room" {
		t.Fatalf("info %+v, %v", info, err)
	}

	// History: newest first, in pages, without thread replies.
	var got []slack.Message
	cursor := ""
	pages := 0
	for {
		res, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", Limit: 10, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		got = append(got, res.Messages...)
		if !res.HasMore {
			break
		}
		cursor = res.ResponseMetaData.NextCursor
	}
	if len(got) != 25 || pages != 3 || got[0].Text != "m24" || got[24].Text != "m0" {
		t.Fatalf("history: %d messages in %d pages, first %q", len(got), pages, got[0].Text)
	}
	parent := got[21]
	if parent.Timestamp != tss[3] || parent.ReplyCount != 2 || parent.ThreadTimestamp != tss[3] {
		t.Errorf("thread parent %+v", parent.Msg)
	}
	if p := got[19]; len(p.PinnedTo) != 1 {
		t.Errorf("pinned message has pinned_to %v", p.PinnedTo)
	}

	replies, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: tss[3]})
	if err != nil || len(replies) != 3 {
		t.Fatalf("replies %d, %v", len(replies), err)
	}
	if r := replies[1]; r.Text != "in thread" || len(r.Reactions) != 1 || r.Reactions[0].Name != "white_check_mark" {
		t.Errorf("reply %+v", r.Msg)
	}
	if replies[2].Timestamp != posted || replies[2].BotID == "" {
		t.Errorf("the bot's reply is not in the thread: %+v", replies[2].Msg)
	}

	items, _, err := api.ListPinsContext(ctx, "C1")
	if err != nil || len(items) != 1 || items[0].Message == nil || items[0].Message.Timestamp != tss[5] {
		t.Fatalf("pins %+v, %v", items, err)
	}

	link, err := api.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: "C1", Ts: tss[2]})
	if err != nil || !strings.HasPrefix(link, "https://") || !strings.Contains(link, "/archives/C1/p") {
		t.Fatalf("permalink %q, %v", link, err)
	}
	if _, err := api.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: "C1", Ts: "1.000000"}); err == nil {
		t.Error("permalink of an unknown message")
	}
	if _, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C404"}); err == nil {
		t.Error("history of an unknown channel")
	}
}

func TestUserGroups(t *testing.T) {
	fake := newFake(t)
	fake.AddUserGroup("S1", "U1", "U2")
	api := newAPI(fake)
	users, err := api.GetUserGroupMembersContext(testCtx(t), "S1")
	if err != nil || strings.Join(users, ",") != "U1,U2" {
		t.Fatalf("%v, %v", users, err)
	}
	var se slack.SlackErrorResponse
	if _, err := api.GetUserGroupMembersContext(testCtx(t), "S404"); !errors.As(err, &se) || se.Err != "no_such_subteam" {
		t.Fatalf("unknown group: %v", err)
	}
}

func modal(title string, blocks ...slack.Block) slack.ModalViewRequest {
	return slack.ModalViewRequest{Type: slack.VTModal, Title: slack.NewTextBlockObject("plain_text", title, false, false),
		Submit: slack.NewTextBlockObject("plain_text", "Save", false, false), Blocks: slack.Blocks{BlockSet: blocks}, CallbackID: "cb"}
}

// interactiveTrigger receives one interactive envelope the fake sent and
// returns its trigger_id.
func interactiveTrigger(t *testing.T, ctx context.Context, client *socketmode.Client, fake *slackfake.Server) string {
	t.Helper()
	fake.SendInteractive(map[string]any{"type": "message_action", "callback_id": "x", "user": map[string]any{"id": "U1"}})
	for {
		select {
		case evt := <-client.Events:
			if evt.Type != socketmode.EventTypeInteractive {
				continue
			}
			client.Ack(*evt.Request)
			var p struct {
				TriggerID string `json:"trigger_id"`
			}
			_ = json.Unmarshal(evt.Request.Payload, &p)
			return p.TriggerID
		case <-ctx.Done():
			t.Fatal("no interactive envelope")
		}
	}
}

func TestViewsOpenTriggerWindowUpdateAndSubmit(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	fake := newFake(t, slackfake.WithClock(clock))
	ctx := testCtx(t)
	client := startClient(t, fake)
	api := newAPI(fake)
	var se slack.SlackErrorResponse

	input := slack.NewInputBlock("title", slack.NewTextBlockObject("plain_text", "Title", false, false), nil,
		&slack.PlainTextInputBlockElement{Type: slack.METPlainTextInput, ActionID: "v", InitialValue: "draft title"})
	tid := interactiveTrigger(t, ctx, client, fake)
	v, err := api.OpenViewContext(ctx, tid, modal("Capture", input))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.OpenViewContext(ctx, tid, modal("Capture", input)); !errors.As(err, &se) || se.Err != "exchanged_trigger_id" {
		t.Errorf("second use of a trigger: %v", err)
	}

	// A trigger used after its window is refused, as Slack does.
	late := interactiveTrigger(t, ctx, client, fake)
	mu.Lock()
	now = now.Add(3*time.Second + time.Millisecond)
	mu.Unlock()
	if _, err := api.OpenViewContext(ctx, late, modal("Capture", input)); !errors.As(err, &se) || se.Err != "expired_trigger_id" {
		t.Errorf("late trigger: %v", err)
	}

	// Updates check the hash and the limits.
	up, err := api.UpdateViewContext(ctx, modal("Capture", input), "", v.Hash, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.UpdateViewContext(ctx, modal("Capture", input), "", v.Hash, v.ID); !errors.As(err, &se) || se.Err != "hash_conflict" {
		t.Errorf("stale hash: %v", err)
	}
	var opts []*slack.OptionBlockObject
	for i := range 101 {
		opts = append(opts, slack.NewOptionBlockObject(fmt.Sprint(i), slack.NewTextBlockObject("plain_text", fmt.Sprint(i), false, false), nil))
	}
	tooMany := slack.NewInputBlock("tags", slack.NewTextBlockObject("plain_text", "Tags", false, false), nil,
		slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic, nil, "v", opts...))
	if _, err := api.UpdateViewContext(ctx, modal("Capture", tooMany), "", up.Hash, v.ID); !errors.As(err, &se) || se.Err != "invalid_arguments" {
		t.Errorf("101 options: %v", err)
	}
	if _, err := api.UpdateViewContext(ctx, modal("A title longer than 24 chars", input), "", "", v.ID); err == nil {
		t.Error("long title accepted")
	}

	// A submission carries the inputs, initial or edited.
	env := fake.SubmitView("U1", v.ID, func(vals slackfake.ViewValues) { vals.SetText("title", "edited") })
	var got slack.InteractionCallback
	for got.Type == "" {
		select {
		case evt := <-client.Events:
			if evt.Type == socketmode.EventTypeInteractive {
				got = evt.Data.(slack.InteractionCallback)
				client.Ack(*evt.Request, map[string]any{"response_action": "errors", "errors": map[string]string{"title": "too short"}})
			}
		case <-ctx.Done():
			t.Fatal("no submission")
		}
	}
	if got.Type != slack.InteractionTypeViewSubmission || got.View.State.Values["title"]["v"].Value != "edited" {
		t.Errorf("submission %+v", got.View.State)
	}
	ack, err := fake.WaitAck(ctx, env)
	if err != nil || !strings.Contains(string(ack), `"response_action":"errors"`) {
		t.Errorf("ack %s, %v", ack, err)
	}
}
