package slackfake_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/incidentbot/incidentbot/internal/slackfake"
)

const (
	botToken = "xoxb-test"
	appToken = "xapp-test"
)

// testCtx bounds a test, so a missing event fails it instead of hanging.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newFake starts a fake that is closed when the test ends, after its clients.
func newFake(t *testing.T, opts ...slackfake.Option) *slackfake.Server {
	fake := slackfake.New(opts...)
	t.Cleanup(fake.Close)
	return fake
}

// newAPI is the real Web API client pointed at the fake.
func newAPI(fake *slackfake.Server, opts ...slack.Option) *slack.Client {
	opts = append([]slack.Option{slack.OptionAppLevelToken(appToken), slack.OptionAPIURL(fake.APIURL())}, opts...)
	return slack.New(botToken, opts...)
}

// startClient runs the real Socket Mode client against the fake until the
// test ends.
func startClient(t *testing.T, fake *slackfake.Server, opts ...socketmode.Option) *socketmode.Client {
	client := socketmode.New(newAPI(fake), opts...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- client.RunContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("RunContext: %v, want context.Canceled", err)
		}
	})
	return client
}

// nextEvent returns the client's next event of type want, skipping
// connection lifecycle events and failing on anything else. After a
// requested disconnect slack-go may report reading from its own closed
// socket as an incoming_error, so that counts as lifecycle too.
func nextEvent(ctx context.Context, client *socketmode.Client, want socketmode.EventType) (socketmode.Event, error) {
	for {
		select {
		case evt := <-client.Events:
			switch evt.Type {
			case want:
				return evt, nil
			case socketmode.EventTypeConnecting, socketmode.EventTypeConnected,
				socketmode.EventTypeHello, socketmode.EventTypeConnectionError,
				socketmode.EventTypeIncomingError:
			default:
				return evt, fmt.Errorf("got %s event (%+v) while waiting for %s", evt.Type, evt.Data, want)
			}
		case <-ctx.Done():
			return socketmode.Event{}, fmt.Errorf("no %s event: %w", want, ctx.Err())
		}
	}
}

// next is nextEvent for the test goroutine.
func next(ctx context.Context, t *testing.T, client *socketmode.Client, want socketmode.EventType) socketmode.Event {
	t.Helper()
	evt, err := nextEvent(ctx, client, want)
	if err != nil {
		t.Fatal(err)
	}
	return evt
}

func TestHello(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	fake := newFake(t, slackfake.WithIdentity(slackfake.Identity{AppID: "A0TEST"}))
	client := startClient(t, fake)

	evt := next(ctx, t, client, socketmode.EventTypeHello)
	if got := evt.Request.ConnectionInfo.AppID; got != "A0TEST" {
		t.Errorf("hello app_id = %q, want A0TEST", got)
	}
	if got := evt.Request.NumConnections; got != 1 {
		t.Errorf("hello num_connections = %d, want 1", got)
	}
	if err := fake.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	opens := fake.Calls("apps.connections.open")
	if len(opens) != 1 || opens[0].Token != appToken {
		t.Errorf("apps.connections.open calls = %+v, want one with the app token", opens)
	}
}

func TestEventsAPIMessageIsAcked(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	fake := newFake(t)
	// Sent before the client connects: it waits for the connection.
	envID := fake.SendEvent(map[string]any{
		"type": "message", "subtype": "bot_message", "channel": "C0INC", "bot_id": "B0ALERTS",
		"text": "", "ts": "1700000000.000001",
		"attachments": []map[string]any{{"title": "[FIRING:1] HighLatency", "text": "p99 > 2s"}},
	})
	client := startClient(t, fake)

	evt := next(ctx, t, client, socketmode.EventTypeEventsAPI)
	if evt.Request.EnvelopeID != envID {
		t.Errorf("envelope_id = %q, want %q", evt.Request.EnvelopeID, envID)
	}
	outer := evt.Data.(slackevents.EventsAPIEvent)
	msg, ok := outer.InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok {
		t.Fatalf("inner event is %T, want *slackevents.MessageEvent", outer.InnerEvent.Data)
	}
	if len(msg.Message.Attachments) != 1 || msg.Message.Attachments[0].Title != "[FIRING:1] HighLatency" {
		t.Errorf("attachments = %+v, want the alert's", msg.Message.Attachments)
	}
	if outer.TeamID != fake.Identity().TeamID {
		t.Errorf("team_id = %q, want %q", outer.TeamID, fake.Identity().TeamID)
	}

	if fake.Acked(envID) {
		t.Fatal("acked before the client acked")
	}
	if err := client.AckCtx(ctx, evt.Request.EnvelopeID, nil); err != nil {
		t.Fatal(err)
	}
	payload, err := fake.WaitAck(ctx, envID)
	if err != nil {
		t.Fatal(err)
	}
	if payload != nil {
		t.Errorf("ack payload = %s, want none", payload)
	}
	if !fake.Acked(envID) || fake.AckTime(envID) <= 0 {
		t.Errorf("Acked = %v, AckTime = %v after the ack", fake.Acked(envID), fake.AckTime(envID))
	}
}

func TestRedeliver(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	fake := newFake(t)
	client := startClient(t, fake)

	first := fake.SendEventWithID("Ev0DUP", json.RawMessage(`{"type":"app_mention","user":"U1","text":"<@U0FAKEBOT> hi","channel":"C1","ts":"1.2"}`))
	evt := next(ctx, t, client, socketmode.EventTypeEventsAPI)
	if evt.Request.RetryAttempt != 0 {
		t.Errorf("first delivery retry_attempt = %d, want 0", evt.Request.RetryAttempt)
	}
	second := fake.Redeliver(first)
	evt = next(ctx, t, client, socketmode.EventTypeEventsAPI)
	cb := evt.Data.(slackevents.EventsAPIEvent).Data.(*slackevents.EventsAPICallbackEvent)
	if evt.Request.EnvelopeID != second || second == first {
		t.Errorf("redelivered envelope_id = %q, want a new id %q", evt.Request.EnvelopeID, second)
	}
	if evt.Request.RetryAttempt != 1 || evt.Request.RetryReason != "timeout" || cb.EventID != "Ev0DUP" {
		t.Errorf("redelivery: retry %d %q, event_id %q; want 1, timeout, Ev0DUP",
			evt.Request.RetryAttempt, evt.Request.RetryReason, cb.EventID)
	}
}

func TestSlashCommandAckPayload(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	fake := newFake(t)
	client := startClient(t, fake)

	envID := fake.SendSlashCommand(map[string]string{
		"command": "/incidents", "text": "db latency", "channel_id": "C0INC", "user_id": "U0ALICE",
	})
	evt := next(ctx, t, client, socketmode.EventTypeSlashCommand)
	cmd := evt.Data.(slack.SlashCommand)
	if cmd.Command != "/incidents" || cmd.Text != "db latency" || cmd.ResponseURL == "" {
		t.Fatalf("slash command = %+v", cmd)
	}
	if !evt.Request.AcceptsResponsePayload {
		t.Error("slash command envelope does not accept a response payload")
	}
	if err := client.AckCtx(ctx, evt.Request.EnvelopeID, map[string]any{
		"response_type": "ephemeral", "text": "Searching…",
	}); err != nil {
		t.Fatal(err)
	}
	raw, err := fake.WaitAck(ctx, envID)
	if err != nil {
		t.Fatal(err)
	}
	var ack struct{ ResponseType, Text string }
	if err := json.Unmarshal(raw, &ack); err != nil || ack.Text != "Searching…" {
		t.Errorf("ack payload = %s (%v), want the ephemeral text", raw, err)
	}

	// The follow-up goes to the response_url.
	if _, _, err := client.PostMessageContext(ctx, cmd.ChannelID,
		slack.MsgOptionResponseURL(cmd.ResponseURL, slack.ResponseTypeInChannel),
		slack.MsgOptionText("3 similar cases", false)); err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls("response_url")
	if len(calls) != 1 || calls[0].Text != "3 similar cases" || calls[0].ResponseType != "in_channel" {
		t.Errorf("response_url calls = %+v", calls)
	}
}

func TestInteractive(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	fake := newFake(t)
	client := startClient(t, fake)

	envID := fake.SendInteractive(map[string]any{
		"type":    "block_actions",
		"user":    map[string]any{"id": "U0ALICE"},
		"channel": map[string]any{"id": "C0INC"},
		// slack-go decodes an action without block_id as a legacy attachment action.
		"actions": []map[string]any{{"type": "button", "block_id": "fb", "action_id": "feedback_up", "value": "case-7"}},
	})
	evt := next(ctx, t, client, socketmode.EventTypeInteractive)
	cb := evt.Data.(slack.InteractionCallback)
	if cb.Type != slack.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) != 1 ||
		cb.ActionCallback.BlockActions[0].ActionID != "feedback_up" || cb.ResponseURL == "" {
		t.Fatalf("callback = %+v", cb)
	}
	client.Ack(*evt.Request)
	if _, err := fake.WaitAck(ctx, envID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := client.PostMessageContext(ctx, "", slack.MsgOptionReplaceOriginal(cb.ResponseURL),
		slack.MsgOptionText("Thanks!", false)); err != nil {
		t.Fatal(err)
	}
	if c := fake.Calls("response_url"); len(c) != 1 || !c[0].ReplaceOriginal {
		t.Errorf("response_url calls = %+v, want one replace_original", c)
	}
}

func TestPostMessageRecorded(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	fake := newFake(t)
	api := newAPI(fake)

	_, ts, err := api.PostMessageContext(ctx, "C0INC",
		slack.MsgOptionText("2 similar cases", false),
		slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "*Case 7*", false, false), nil, nil)),
		slack.MsgOptionTS("1700000000.000001"),
		slack.MsgOptionDisableLinkUnfurl(),
		slack.MsgOptionDisableMediaUnfurl(),
		slack.MsgOptionMetadata(slack.SlackMetadata{EventType: "similar_cases", EventPayload: map[string]any{"query_id": "q1"}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	calls, err := fake.WaitCalls(ctx, "chat.postMessage", 1)
	if err != nil {
		t.Fatal(err)
	}
	c := calls[0]
	switch {
	case c.Token != botToken, c.Channel != "C0INC", c.TS != ts, c.ThreadTS != "1700000000.000001":
		t.Errorf("call = %+v", c)
	case len(c.Blocks) != 1 || c.Blocks[0]["type"] != "section":
		t.Errorf("blocks = %v", c.Blocks)
	case c.Metadata["event_type"] != "similar_cases", c.UnfurlLinks != "false", c.UnfurlMedia != "false":
		t.Errorf("metadata %v, unfurl_links %q, unfurl_media %q", c.Metadata, c.UnfurlLinks, c.UnfurlMedia)
	case c.Form.Get("blocks") == "":
		t.Error("raw form lost the blocks")
	}

	// Updates need an existing message; timestamps only go up.
	if _, _, _, err := api.UpdateMessageContext(ctx, "C0INC", ts, slack.MsgOptionText("edited", false)); err != nil {
		t.Errorf("update: %v", err)
	}
	_, _, _, err = api.UpdateMessageContext(ctx, "C0INC", "1.1", slack.MsgOptionText("edited", false))
	if e, ok := errors.AsType[slack.SlackErrorResponse](err); !ok || e.Err != "message_not_found" {
		t.Errorf("update of unknown ts: %v, want message_not_found", err)
	}
	_, ts2, err := api.PostMessageContext(ctx, "C0INC", slack.MsgOptionText("again", false))
	if err != nil || ts2 <= ts {
		t.Errorf("second ts %q (err %v), want after %q", ts2, err, ts)
	}
}

func TestInvalidBlocks(t *testing.T) {
	t.Parallel()
	section := func(n int) slack.Block {
		return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("x", n), false, false), nil, nil)
	}
	header := func(n int) slack.Block {
		return slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, strings.Repeat("h", n), false, false))
	}
	many := func(n int) []slack.Block {
		var bs []slack.Block
		for range n {
			bs = append(bs, section(10))
		}
		return bs
	}
	for _, tt := range []struct {
		name    string
		blocks  []slack.Block
		wantErr string
	}{
		{"section at limit", []slack.Block{section(3000)}, ""},
		{"section too long", []slack.Block{section(3001)}, "invalid_blocks"},
		{"header at limit", []slack.Block{header(150)}, ""},
		{"header too long", []slack.Block{header(151)}, "invalid_blocks"},
		{"50 blocks", many(50), ""},
		{"51 blocks", many(51), "invalid_blocks"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			fake := newFake(t)
			_, _, err := newAPI(fake).PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false), slack.MsgOptionBlocks(tt.blocks...))
			var got string
			if e, ok := errors.AsType[slack.SlackErrorResponse](err); ok {
				got = e.Err
				if len(e.ResponseMetadata.Messages) == 0 {
					t.Error("no response_metadata messages explain the error")
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got != tt.wantErr {
				t.Errorf("error = %q, want %q", got, tt.wantErr)
			}
			if c := fake.Calls("chat.postMessage"); len(c) != 1 || c[0].Error != tt.wantErr {
				t.Errorf("recorded %+v", c)
			}
		})
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	fake := newFake(t)
	fake.FailNext("chat.postMessage", 1, slackfake.Fault{Status: http.StatusTooManyRequests, RetryAfter: time.Second})

	_, _, err := newAPI(fake).PostMessageContext(ctx, "C1", slack.MsgOptionText("hi", false))
	rl, ok := errors.AsType[*slack.RateLimitedError](err)
	if !ok || rl.RetryAfter != time.Second {
		t.Fatalf("err = %v, want *slack.RateLimitedError with RetryAfter 1s", err)
	}

	// With retries on, slack-go waits out Retry-After before trying again.
	fake.FailNext("chat.postMessage", 1, slackfake.Fault{Status: http.StatusTooManyRequests, RetryAfter: time.Second})
	if _, _, err := newAPI(fake, slack.OptionRetry(1)).PostMessageContext(ctx, "C1", slack.MsgOptionText("hi", false)); err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls("chat.postMessage")
	if len(calls) != 3 || calls[1].Status != http.StatusTooManyRequests || calls[2].Status != http.StatusOK {
		t.Fatalf("calls = %+v", calls)
	}
	if gap := calls[2].Time.Sub(calls[1].Time); gap < time.Second {
		t.Errorf("retry came %v after the 429, want at least 1s", gap)
	}
}

func TestWebAPI(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	fake := newFake(t, slackfake.WithTokens(botToken, appToken))
	fake.AddChannel("C0INC", "inc-db", true)
	api := newAPI(fake)

	auth, err := api.AuthTestContext(ctx)
	if id := fake.Identity(); err != nil || auth.UserID != id.UserID || auth.BotID != id.BotID || auth.TeamID != id.TeamID {
		t.Errorf("auth.test = %+v, %v; want %+v", auth, err, id)
	}
	ch, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "C0INC"})
	if err != nil || ch.Name != "inc-db" || !ch.IsPrivate {
		t.Errorf("conversations.info = %+v, %v", ch, err)
	}
	_, err = api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "C0NOPE"})
	if e, ok := errors.AsType[slack.SlackErrorResponse](err); !ok || e.Err != "channel_not_found" {
		t.Errorf("unknown channel: %v", err)
	}
	fake.AddUser("U0ALICE", "alice")
	if u, err := api.GetUserInfoContext(ctx, "U0ALICE"); err != nil || u.Name != "alice" {
		t.Errorf("users.info = %+v, %v", u, err)
	}
	ref := slack.NewRefToMessage("C0INC", "1700000000.000100")
	if err := api.AddReactionContext(ctx, "eyes", ref); err != nil {
		t.Error(err)
	}
	if err := api.AddReactionContext(ctx, "eyes", ref); err == nil || err.Error() != "already_reacted" {
		t.Errorf("second reaction: %v, want already_reacted", err)
	}
	home := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "hi", false, false), nil, nil)}}}
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U0ALICE", View: home}); err != nil {
		t.Errorf("views.publish: %v", err)
	}
	if c := fake.Calls("views.publish"); len(c) != 1 || c[0].Token != botToken || c[0].JSON["user_id"] != "U0ALICE" {
		t.Errorf("views.publish calls = %+v", c)
	}

	// Injected errors, wrong tokens and unknown methods.
	fake.FailNext("users.info", 1, slackfake.Fault{Error: "user_not_found"})
	if _, err := api.GetUserInfoContext(ctx, "U0ALICE"); err == nil || err.Error() != "user_not_found" {
		t.Errorf("injected error: %v", err)
	}
	if _, err := slack.New("xoxb-wrong", slack.OptionAPIURL(fake.APIURL())).AuthTestContext(ctx); err == nil || err.Error() != "invalid_auth" {
		t.Errorf("wrong token: %v, want invalid_auth", err)
	}
	resp, err := http.PostForm(fake.APIURL()+"no.such", url.Values{"token": {botToken}})
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		OK    bool
		Error string
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || body.OK || body.Error != "unknown_method" || len(fake.Calls("no.such")) != 1 {
		t.Errorf("unknown method answered %+v (%v)", body, err)
	}
}

func TestReconnect(t *testing.T) {
	t.Parallel()
	for name, cut := range map[string]func(*slackfake.Server){
		"disconnect": func(f *slackfake.Server) { f.Disconnect("refresh_requested") },
		"drop":       (*slackfake.Server).DropConnections,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			fake := newFake(t)
			client := startClient(t, fake)
			if err := fake.WaitConnected(ctx, 1); err != nil {
				t.Fatal(err)
			}
			cut(fake)
			if _, err := fake.WaitCalls(ctx, "apps.connections.open", 2); err != nil {
				t.Fatal(err)
			}
			if err := fake.WaitConnected(ctx, 1); err != nil {
				t.Fatal(err)
			}
			envID := fake.SendEvent(map[string]any{"type": "app_mention", "user": "U1", "text": "hi", "channel": "C1", "ts": "1.1"})
			evt := next(ctx, t, client, socketmode.EventTypeEventsAPI)
			client.Ack(*evt.Request)
			if _, err := fake.WaitAck(ctx, envID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestBadMessages(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		raw  string
		want socketmode.EventType
	}{
		{"unknown inner event", `{"envelope_id":"bad-1","type":"events_api","accepts_response_payload":false,` +
			`"payload":{"type":"event_callback","event_id":"Ev1","event":{"type":"no_such_event"}}}`,
			socketmode.EventTypeErrorBadMessage},
		{"unknown envelope type", `{"envelope_id":"bad-2","type":"surprise","payload":{}}`,
			socketmode.EventTypeErrorBadMessage},
		// Invalid JSON never becomes a bad message, and has no envelope to ack.
		{"not JSON", `{nope}`, socketmode.EventTypeIncomingError},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			fake := newFake(t)
			client := startClient(t, fake)
			envID := fake.SendRaw(tt.raw)
			evt := next(ctx, t, client, tt.want)
			if evt.Request != nil {
				t.Errorf("bad message came with a request: %+v", evt.Request)
			}
			if envID == "" {
				return
			}
			// Nothing acks a bad message for you: decode the envelope id and ack it.
			var req socketmode.Request
			if err := json.Unmarshal(evt.Data.(*socketmode.ErrorBadMessage).Message, &req); err != nil {
				t.Fatal(err)
			}
			if err := client.AckCtx(ctx, req.EnvelopeID, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := fake.WaitAck(ctx, envID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestConnectionsRoundRobin(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	fake := newFake(t, slackfake.WithMaxConnections(2))
	a := startClient(t, fake)
	if err := fake.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	b := startClient(t, fake)
	if err := fake.WaitConnected(ctx, 2); err != nil {
		t.Fatal(err)
	}

	// A third connection is refused; the client backs off and retries.
	startClient(t, fake)
	if _, err := fake.WaitCall(ctx, func(c slackfake.Call) bool { return c.Error == "too_many_websockets" }); err != nil {
		t.Fatal(err)
	}

	// SendTo picks a connection; the Server spreads envelopes over both.
	event := map[string]any{"type": "app_mention", "user": "U1", "text": "hi", "channel": "C1", "ts": "1.1"}
	toB := fake.SendTo(1).SendEvent(event)
	if got := next(ctx, t, b, socketmode.EventTypeEventsAPI).Request.EnvelopeID; got != toB {
		t.Errorf("SendTo(1) reached b with %q, want %q", got, toB)
	}
	var wg sync.WaitGroup
	for _, c := range []*socketmode.Client{a, b} {
		wg.Go(func() {
			evt, err := nextEvent(ctx, c, socketmode.EventTypeEventsAPI)
			if err != nil {
				t.Error(err)
				return
			}
			_ = c.AckCtx(ctx, evt.Request.EnvelopeID, nil)
		})
	}
	ids := []string{fake.SendEvent(event), fake.SendEvent(event)}
	wg.Wait()
	for _, id := range ids {
		if _, err := fake.WaitAck(ctx, id); err != nil {
			t.Error(err)
		}
	}
}

func TestPingWatchdog(t *testing.T) {
	t.Parallel()
	const watchdog = 200 * time.Millisecond
	t.Run("pings keep the connection", func(t *testing.T) {
		t.Parallel()
		const every = 20 * time.Millisecond
		fake := newFake(t, slackfake.WithPingInterval(every))
		startClient(t, fake, socketmode.OptionPingInterval(watchdog))
		// Not a time window: wait until one connection has answered pings
		// spanning five watchdog periods. A watchdog that fired in that
		// time would have replaced it, and no connection would get there.
		ctx := testCtx(t)
		if err := fake.WaitPongs(ctx, int(5*watchdog/every)); err != nil {
			t.Fatalf("no connection lived through five watchdog periods: %v", err)
		}
		if n := len(fake.Calls("apps.connections.open")); n != 1 {
			t.Errorf("%d connections opened while pings flowed, want 1", n)
		}
	})
	t.Run("no pings, the client reconnects", func(t *testing.T) {
		t.Parallel()
		fake := newFake(t, slackfake.WithPingInterval(0))
		startClient(t, fake, socketmode.OptionPingInterval(watchdog))
		if _, err := fake.WaitCalls(testCtx(t), "apps.connections.open", 2); err != nil {
			t.Errorf("no reconnect without pings: %v", err)
		}
	})
}

func TestNoGoroutineLeak(t *testing.T) {
	// Not parallel: it inspects every goroutine in the process.
	ctx := testCtx(t)
	fake := slackfake.New()
	client := socketmode.New(newAPI(fake))
	clientCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- client.RunContext(clientCtx) }()

	if err := fake.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fake.SendEvent(map[string]any{"type": "app_mention", "user": "U1", "text": "hi", "channel": "C1", "ts": "1.1"})
	next(ctx, t, client, socketmode.EventTypeEventsAPI)
	fake.Disconnect("warning")
	if err := fake.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	fake.Close()
	fake.Close() // idempotent

	// Close waits for every goroutine of the fake; one that has called
	// wg.Done may still be returning, so give the scheduler a few turns
	// (no clock involved) before calling a goroutine left behind.
	var left []string
	for range 1000 {
		left = left[:0]
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		for g := range strings.SplitSeq(stacks, "\n\n") {
			if strings.Contains(g, "/internal/slackfake.") {
				left = append(left, g)
			}
		}
		if len(left) == 0 {
			return
		}
		runtime.Gosched()
	}
	for _, g := range left {
		t.Errorf("goroutine left after Close:\n%s", g)
	}
	if _, err := fake.WaitCalls(ctx, "never.called", 1); !errors.Is(err, slackfake.ErrClosed) {
		t.Errorf("wait after Close: %v, want ErrClosed", err)
	}
}
