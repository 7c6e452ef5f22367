package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/internal/slackfake"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/store"
)

// Channels of the fake workspace.
const (
	incChannel   = "C0INC1" // inc-checkout: an incident channel by name
	incChannel2  = "C0INC2" // incident-db: another
	otherChannel = "C0GENERAL"
	privChannel  = "G0PRIV" // inc-secret: a private incident channel
)

var (
	libOnce sync.Once
	testM   *matcher.Matcher
)

// testMatcher is a matcher over the matcher's labelled test library, shared
// by the tests (building it is the slow part).
func testMatcher(t testing.TB) *matcher.Matcher {
	t.Helper()
	libOnce.Do(func() {
		set, err := cases.Load("../matcher/testdata/library", cases.DefaultTaxonomy())
		if err != nil {
			panic(err)
		}
		lib, _ := cases.NewLibrary(set)
		testM, err = matcher.New(lib, matcher.Options{})
		if err != nil {
			panic(err)
		}
	})
	return testM
}

// recorder is a Recorder that keeps what it was given.
type recorder struct {
	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every record
	suggestions []store.Suggestion
	feedback    []store.Feedback
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) RecordSuggestionAsync(s store.Suggestion) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.suggestions = append(r.suggestions, s)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) RecordFeedbackAsync(f store.Feedback) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.feedback = append(r.feedback, f)
	close(r.changed)
	r.changed = make(chan struct{})
}

// waitSuggestions waits until n suggestions are recorded and returns them.
func (r *recorder) waitSuggestions(ctx context.Context, n int) ([]store.Suggestion, error) {
	for {
		r.mu.Lock()
		if len(r.suggestions) >= n {
			out := append([]store.Suggestion(nil), r.suggestions...)
			r.mu.Unlock()
			return out, nil
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

type harness struct {
	t     *testing.T
	fake  *slackfake.Server
	bot   *bot.Bot
	rec   *recorder
	stop  context.CancelFunc
	done  chan error
	ctx   context.Context
	ts    int
	mu    sync.Mutex
	count int

	stopOnce sync.Once
	runErr   error
}

// shutdown stops the bot as SIGTERM does and returns Run's result: once it
// returns, every queued event has been handled.
func (h *harness) shutdown() error {
	h.stopOnce.Do(func() {
		h.stop()
		h.runErr = <-h.done
	})
	return h.runErr
}

// start runs a bot against a fake Slack. The bot is stopped and its
// result checked when the test ends.
func start(t *testing.T, tweak func(*bot.Options)) *harness {
	t.Helper()
	fake := slackfake.New()
	t.Cleanup(fake.Close)
	return startWith(t, fake, tweak)
}

// startWith runs a bot against the given fake Slack.
func startWith(t *testing.T, fake *slackfake.Server, tweak func(*bot.Options)) *harness {
	t.Helper()
	fake.AddChannel(incChannel, "inc-checkout", false)
	fake.AddChannel(incChannel2, "incident-db", false)
	fake.AddChannel(otherChannel, "general", false)
	fake.AddChannel(privChannel, "inc-secret", true)
	rec := newRecorder()
	opts := bot.Options{
		AppToken:        "xapp-1-test",
		BotToken:        "xoxb-test",
		APIURL:          fake.APIURL(),
		ChannelPatterns: []string{"inc-*", "incident-*"},
		PostEvery:       20 * time.Millisecond,
		Recorder:        rec,
	}
	if tweak != nil {
		tweak(&opts)
	}
	b, err := bot.New(testMatcher(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	h := &harness{t: t, fake: fake, bot: b, rec: rec, stop: cancel, done: done, ts: 1732870000}
	t.Cleanup(func() {
		if err := h.shutdown(); err != nil {
			t.Errorf("Run returned %v", err)
		}
	})
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := fake.WaitConnected(wctx, 1); err != nil {
		t.Fatalf("bot did not connect: %v", err)
	}
	h.ctx = context.Background()
	return h
}

// waitCtx bounds a wait in a test.
func (h *harness) waitCtx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

// event loads a fixture event and gives it a fresh ts (and channel).
func (h *harness) event(name, channel string) map[string]any {
	h.t.Helper()
	data, err := os.ReadFile("testdata/events/" + name + ".json")
	if err != nil {
		h.t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(data, &ev); err != nil {
		h.t.Fatal(err)
	}
	h.mu.Lock()
	h.ts++
	ev["ts"] = fmt.Sprintf("%d.000100", h.ts)
	h.mu.Unlock()
	ev["channel"] = channel
	return ev
}

func (h *harness) ack(id string) json.RawMessage {
	h.t.Helper()
	p, err := h.fake.WaitAck(h.waitCtx(), id)
	if err != nil {
		h.t.Fatalf("envelope %s not acked: %v", id, err)
	}
	return p
}

// reply waits for a reply posted in the thread of ev.
func (h *harness) reply(ev map[string]any) slackfake.Call {
	h.t.Helper()
	c, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool {
		return c.Method == "chat.postMessage" && c.Channel == ev["channel"] && c.ThreadTS == ev["ts"]
	})
	if err != nil {
		h.t.Fatalf("no reply in thread %v: %v", ev["ts"], err)
	}
	return c
}

// barrier sends an alert in another channel and waits for its reply: with
// one worker, the events sent before it have been handled by then.
func (h *harness) barrier() {
	h.t.Helper()
	last := h.event("opsgenie", incChannel2)
	h.ack(h.fake.SendEvent(last))
	h.reply(last)
}

// repliesIn counts the replies posted in the thread of ev.
func (h *harness) repliesIn(ev map[string]any) int {
	n := 0
	for _, c := range h.fake.Calls("chat.postMessage") {
		if c.Channel == ev["channel"] && c.ThreadTS == ev["ts"] {
			n++
		}
	}
	return n
}

func blocksText(c slackfake.Call) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(c.Blocks)
	return b.String()
}

func TestAlertWithEmptyTextGetsOneThreadedReply(t *testing.T) {
	for _, tc := range []struct{ fixture, wantCase string }{
		{"alertmanager", "tl-010"},
		{"grafana", "tl-003"},
		{"datadog", "tl-001"},
		{"pagerduty", "tl-002"},
		{"opsgenie", "tl-005"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			h := start(t, nil)
			ev := h.event(tc.fixture, incChannel)
			h.ack(h.fake.SendEvent(ev))
			c := h.reply(ev)
			if !strings.Contains(blocksText(c), tc.wantCase) {
				t.Errorf("reply does not name %s:\n%s", tc.wantCase, blocksText(c))
			}
			if c.UnfurlLinks != "false" || c.UnfurlMedia != "false" {
				t.Errorf("unfurl_links=%q unfurl_media=%q, want both false", c.UnfurlLinks, c.UnfurlMedia)
			}
			if c.Text == "" {
				t.Error("no plain-text fallback")
			}
		})
	}
}

func TestChatterAndOtherChannelsGetNoReply(t *testing.T) {
	// One worker handles events in order, so once the last event's reply
	// is posted, the earlier ones have been handled.
	h := start(t, func(o *bot.Options) { o.Workers = 1 })
	chatter := h.event("chatter", incChannel)
	h.ack(h.fake.SendEvent(chatter))
	elsewhere := h.event("alertmanager", otherChannel)
	h.ack(h.fake.SendEvent(elsewhere))
	h.barrier()
	if n := h.repliesIn(chatter); n != 0 {
		t.Errorf("chatter got %d replies", n)
	}
	if n := h.repliesIn(elsewhere); n != 0 {
		t.Errorf("an alert outside incident channels got %d replies", n)
	}
}

func TestKoreanMessageGetsKoreanReply(t *testing.T) {
	h := start(t, nil)
	ev := h.event("korean", incChannel)
	h.ack(h.fake.SendEvent(ev))
	c := h.reply(ev)
	body := blocksText(c)
	for _, want := range []string{"비슷한 과거 장애", "도움이 됨", "tl-001"} {
		if !strings.Contains(body, want) {
			t.Errorf("Korean reply lacks %q:\n%s", want, body)
		}
	}
	if matcher.DetectLang(c.Text) != cases.Korean {
		t.Errorf("fallback text is not Korean: %q", c.Text)
	}
}

func TestRedeliveredEnvelopeHandledOnce(t *testing.T) {
	h := start(t, func(o *bot.Options) { o.Workers = 1 })
	ev := h.event("alertmanager", incChannel)
	id := h.fake.SendEvent(ev)
	h.ack(id)
	h.ack(h.fake.Redeliver(id))
	h.ack(h.fake.Redeliver(id))
	h.barrier()
	if n := h.repliesIn(ev); n != 1 {
		t.Errorf("%d replies for one redelivered event, want 1", n)
	}
}

func TestAlertStormAckedAndAnsweredOnce(t *testing.T) {
	h := start(t, func(o *bot.Options) { o.Workers = 1; o.QueueSize = 500 })
	var first map[string]any
	var ids []string
	for i := range 200 {
		ev := h.event("alertmanager", incChannel)
		if i == 0 {
			first = ev
		}
		ids = append(ids, h.fake.SendEvent(ev))
	}
	for _, id := range ids {
		h.ack(id)
	}
	h.barrier()
	if n := h.repliesIn(first); n != 1 {
		t.Errorf("first alert got %d replies, want 1", n)
	}
	total := 0
	for _, c := range h.fake.Calls("chat.postMessage") {
		if c.Channel == incChannel {
			total++
		}
	}
	if total != 1 {
		t.Errorf("%d replies in the channel for 200 copies of one alert, want 1", total)
	}
}

func TestRateLimitedPostRetriedAfterRetryAfter(t *testing.T) {
	h := start(t, nil)
	h.fake.FailNext("chat.postMessage", 1, slackfake.Fault{Status: 429, RetryAfter: time.Second})
	ev := h.event("alertmanager", incChannel)
	h.ack(h.fake.SendEvent(ev))
	calls, err := h.fake.WaitCalls(h.waitCtx(), "chat.postMessage", 2)
	if err != nil {
		t.Fatal(err)
	}
	if calls[0].Status != 429 {
		t.Fatalf("first call status %d, want 429", calls[0].Status)
	}
	if gap := calls[1].Time.Sub(calls[0].Time); gap < time.Second {
		t.Errorf("retried after %v, before the 1s Slack asked for", gap)
	}
	if calls[1].ThreadTS != ev["ts"] {
		t.Errorf("retry went to thread %q", calls[1].ThreadTS)
	}
}

func TestReconnectAfterDisconnect(t *testing.T) {
	h := start(t, nil)
	h.fake.Disconnect("refresh_requested")
	if _, err := h.fake.WaitCalls(h.waitCtx(), "apps.connections.open", 2); err != nil {
		t.Fatalf("no reconnect: %v", err)
	}
	if err := h.fake.WaitConnected(h.waitCtx(), 1); err != nil {
		t.Fatal(err)
	}
	ev := h.event("alertmanager", incChannel)
	h.ack(h.fake.SendEvent(ev))
	h.reply(ev)
}

func TestUndecodableEnvelopeAcked(t *testing.T) {
	h := start(t, nil)
	id := h.fake.SendRaw(`{"envelope_id":"bad-envelope-1","type":"mystery_type","payload":{"x":1},"accepts_response_payload":false}`)
	h.ack(id)
	// The bot keeps working.
	ev := h.event("alertmanager", incChannel)
	h.ack(h.fake.SendEvent(ev))
	h.reply(ev)
}

func TestNeverAnswersItself(t *testing.T) {
	h := start(t, func(o *bot.Options) { o.Workers = 1 })
	own := h.event("alertmanager", incChannel)
	own["bot_id"] = h.fake.Identity().BotID
	h.ack(h.fake.SendEvent(own))
	h.barrier()
	if n := h.repliesIn(own); n != 0 {
		t.Errorf("the bot answered its own message %d times", n)
	}
}

// memInbox is an Inbox in memory; orphaned holds events a "dead replica"
// recorded and never handled.
type memInbox struct {
	mu       sync.Mutex
	seen     map[string]bool
	done     map[string]bool
	orphaned []store.InboxItem
}

func (in *memInbox) Put(_ context.Context, key, kind string, payload []byte) (bool, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.seen[key] {
		return false, nil
	}
	in.seen[key] = true
	return true, nil
}

func (in *memInbox) Done(_ context.Context, key string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.done[key] = true
	return nil
}

func (in *memInbox) Renew(context.Context) error { return nil }

func (in *memInbox) Orphans(_ context.Context, limit int) ([]store.InboxItem, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := in.orphaned
	in.orphaned = nil
	return out, nil
}

func TestOrphanedEventTakenOver(t *testing.T) {
	data, err := os.ReadFile("testdata/events/alertmanager.json")
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(map[string]any{"type": "event_callback", "event_id": "EvDEAD1", "event": json.RawMessage(data)})
	inbox := &memInbox{seen: map[string]bool{}, done: map[string]bool{},
		orphaned: []store.InboxItem{{Key: "EvDEAD1", Kind: "events_api", Payload: payload}}}
	h := start(t, func(o *bot.Options) { o.Inbox = inbox; o.OrphanEvery = 50 * time.Millisecond })
	var ev map[string]any
	json.Unmarshal(data, &ev)
	h.reply(ev)
	// A redelivery of an event the inbox has seen is acked and dropped.
	og := h.event("opsgenie", incChannel)
	id := h.fake.SendEventWithID("EvDEAD2", og)
	h.ack(id)
	h.ack(h.fake.Redeliver(id))
	h.reply(og)
	if n := h.repliesIn(og); n != 1 {
		t.Errorf("%d replies to a redelivered event", n)
	}
	inbox.mu.Lock()
	defer inbox.mu.Unlock()
	if !inbox.done["EvDEAD1"] {
		t.Error("the orphan was not marked done")
	}
}

func mustJSON(v any) []byte {
	data, _ := json.Marshal(v)
	return data
}

// panicky is a Searcher that panics on one text.
type panicky struct{ bot.Searcher }

func (p panicky) MatchWith(ctx context.Context, text string, top int, opts matcher.MatchOptions) (*matcher.Answer, error) {
	if strings.Contains(text, "PANIC-NOW") {
		panic("boom")
	}
	return p.Searcher.MatchWith(ctx, text, top, opts)
}

func TestPanicInHandlerRecovered(t *testing.T) {
	h := start(t, func(o *bot.Options) { o.Workers = 1 })
	h.bot.SetSearcher(panicky{testMatcher(t)})
	bad := h.event("chatter", incChannel)
	bad["text"] = "PANIC-NOW pods OOMKilled"
	h.ack(h.fake.SendEvent(bad))
	ev := h.event("alertmanager", incChannel2)
	h.ack(h.fake.SendEvent(ev))
	h.reply(ev) // the bot kept running
	// With one worker, the bad event was handled before: it did panic.
	if n := metric(t, h.bot, "incidentbot_handler_panics_total"); n != 1 {
		t.Errorf("incidentbot_handler_panics_total = %v, want 1: the handler never panicked", n)
	}
	if n := h.repliesIn(bad); n != 0 {
		t.Errorf("the event that panicked got %d replies", n)
	}
}

// metric reads a metric without labels from the bot's /metrics.
func metric(t *testing.T, b *bot.Bot, name string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	b.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no metric %s on /metrics", name)
	return 0
}

// pendingState is in-memory state with one pending reply: a replica began
// posting it and stopped.
type pendingState struct {
	bot.State
	pending store.Reply
}

func (p *pendingState) GetReply(ctx context.Context, channel, thread string) (store.Reply, bool, error) {
	if channel == p.pending.Channel && thread == p.pending.Thread {
		r, ok, err := p.State.GetReply(ctx, channel, thread)
		if ok {
			return r, ok, err
		}
		return p.pending, true, nil
	}
	return p.State.GetReply(ctx, channel, thread)
}

func TestTakeoverDoesNotPostAgain(t *testing.T) {
	data, err := os.ReadFile("testdata/events/alertmanager.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	json.Unmarshal(data, &ev)
	payload, _ := json.Marshal(map[string]any{"type": "event_callback", "event_id": "EvDIED", "event": ev})
	inbox := &memInbox{seen: map[string]bool{}, done: map[string]bool{},
		orphaned: []store.InboxItem{{Key: "EvDIED", Kind: "events_api", Payload: payload}}}
	fake := slackfake.New()
	defer fake.Close()
	// The stopped replica's reply reached Slack before it could save it.
	api := slack.New("xoxb-other", slack.OptionAPIURL(fake.APIURL()))
	if _, _, err := api.PostMessage(incChannel, slack.MsgOptionText("earlier reply", false), slack.MsgOptionTS(ev["ts"].(string))); err != nil {
		t.Fatal(err)
	}
	state := &pendingState{pending: store.Reply{Channel: incChannel, Thread: ev["ts"].(string), CaseIDs: []string{"tl-010"}}}
	h := startWith(t, fake, func(o *bot.Options) {
		o.Inbox, o.OrphanEvery, o.Workers = inbox, 50*time.Millisecond, 1
		state.State = bot.NewMemState()
		o.State = state
	})
	if _, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "conversations.replies" }); err != nil {
		t.Fatal(err)
	}
	h.barrier()
	if n := h.repliesIn(ev); n != 1 {
		t.Errorf("%d replies in the thread, want the one that was already there", n)
	}
}
