package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/internal/slackfake"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/store"
)

// TestResponseURLOnlySlacks: a response_url read back from a stored payload
// is posted to only when it is Slack's (or the configured API's, here the
// fake's); any other is refused, so the bot's answers and token go nowhere
// else.
func TestResponseURLOnlySlacks(t *testing.T) {
	var stolen atomic.Int32
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		w.Write([]byte(`{"ok":true}`))
	}))
	defer evil.Close()
	fake := slackfake.New()
	defer fake.Close()
	fake.FailNext("chat.postEphemeral", 3, slackfake.Fault{Error: "channel_not_found"})

	// A shortcut in a channel the bot is not in is answered through its
	// response_url only. The first names another server; the second is
	// the fake Slack's.
	shortcut := func(trigger, responseURL string) store.InboxItem {
		ev := map[string]any{"type": "message", "user": "U0PERSON", "ts": "1732880000.000100", "channel": "C0NOTIN",
			"text": "x509: certificate has expired calling billing.internal, mTLS handshakes failing"}
		payload, _ := json.Marshal(map[string]any{"type": "message_action", "callback_id": bot.ShortcutID, "trigger_id": trigger,
			"user": map[string]any{"id": "U0ASKER"}, "channel": map[string]any{"id": "C0NOTIN"}, "message": ev, "response_url": responseURL})
		return store.InboxItem{Key: "ia:" + trigger, Kind: "interactive", Payload: payload}
	}
	inbox := &memInbox{seen: map[string]bool{}, done: map[string]bool{}, orphaned: []store.InboxItem{
		shortcut("trig-evil", evil.URL+"/steal"),
		shortcut("trig-lookalike", "https://hooks.slack.com.evil.example/x"),
		shortcut("trig-ok", fake.ResponseURL()),
	}}
	h := startWith(t, fake, func(o *bot.Options) {
		o.Inbox, o.OrphanEvery, o.Workers = inbox, 50*time.Millisecond, 1
	})
	// One worker handles the three in order: once the last is answered,
	// the first two were handled.
	if _, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "response_url" }); err != nil {
		t.Fatalf("the shortcut with Slack's response_url was not answered: %v", err)
	}
	if n := stolen.Load(); n != 0 {
		t.Errorf("the bot posted %d times to a response_url that is not Slack's", n)
	}
	if n := len(h.fake.Calls("response_url")); n != 1 {
		t.Errorf("%d posts to response URLs, want 1", n)
	}
}

// slowSearcher holds every Match until release is closed, counting how many
// are held at once.
type slowSearcher struct {
	bot.Searcher
	release chan struct{}
	mu      sync.Mutex
	held    int
	most    int
}

func (s *slowSearcher) MatchWith(ctx context.Context, text string, top int, opts matcher.MatchOptions) (*matcher.Answer, error) {
	s.mu.Lock()
	s.held++
	s.most = max(s.most, s.held)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.held--
		s.mu.Unlock()
	}()
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Searcher.MatchWith(ctx, text, top, opts)
}

// TestSlashCommandsBounded: commands whose answers are slow do not pile up:
// past MaxCommands at once, a command is acked at once with a busy answer,
// and every command is acked within Slack's 3 seconds.
func TestSlashCommandsBounded(t *testing.T) {
	h := start(t, func(o *bot.Options) { o.MaxCommands = 4 })
	slow := &slowSearcher{Searcher: testMatcher(t), release: make(chan struct{})}
	h.bot.SetSearcher(slow)
	var ids []string
	for i := range 12 {
		ids = append(ids, h.fake.SendSlashCommand(map[string]string{"command": "/incidents", "text": "similar pods OOMKilled after the deploy",
			"user_id": "U0ASKER", "channel_id": incChannel, "trigger_id": fmt.Sprint("T", i), "response_url": h.fake.ResponseURL()}))
	}
	busy := 0
	for _, id := range ids {
		p := string(h.ack(id))
		if d := h.fake.AckTime(id); d > 3*time.Second {
			t.Errorf("command %s acked after %v, past Slack's 3 s", id, d)
		}
		if strings.Contains(p, "Too many searches") {
			busy++
		}
	}
	if busy != 8 {
		t.Errorf("%d of 12 commands answered busy, want 8 (4 at once)", busy)
	}
	slow.mu.Lock()
	most := slow.most
	slow.mu.Unlock()
	if most > 4 {
		t.Errorf("%d answers computed at once, want at most 4", most)
	}
	close(slow.release)
	// The four held answers follow through their response URLs.
	if _, err := h.fake.WaitCalls(h.waitCtx(), "response_url", 4); err != nil {
		t.Errorf("late answers: %v", err)
	}
}

// slowInbox is an inbox on a slow database: every Put takes delay (less
// than InboxTimeout: slow, not failing).
type slowInbox struct {
	memInbox
	delay time.Duration
	puts  atomic.Int32
}

func (in *slowInbox) Put(ctx context.Context, key, kind string, payload []byte) (bool, error) {
	select {
	case <-time.After(in.delay):
	case <-ctx.Done():
		return false, ctx.Err()
	}
	in.puts.Add(1)
	return in.memInbox.Put(ctx, key, kind, payload)
}

// TestSlowInboxDoesNotDelayAcks: with every inbox write taking 200 ms, a
// burst of 30 events is acked within Slack's 3 s, each recorded before its
// ack, none handled without its record and none lost.
func TestSlowInboxDoesNotDelayAcks(t *testing.T) {
	in := &slowInbox{memInbox: memInbox{seen: map[string]bool{}, done: map[string]bool{}}, delay: 200 * time.Millisecond}
	h := start(t, func(o *bot.Options) { o.Inbox, o.InboxTimeout = in, time.Second })
	var ids []string
	for i := range 30 {
		ev := h.event("chatter", incChannel)
		ids = append(ids, h.fake.SendEventWithID(fmt.Sprint("EvSLOW", i), ev))
	}
	var slowest time.Duration
	for _, id := range ids {
		h.ack(id)
		slowest = max(slowest, h.fake.AckTime(id))
	}
	if slowest > 2*time.Second {
		t.Errorf("slowest ack took %v with a 200 ms inbox, want well under Slack's 3 s", slowest)
	}
	if n := in.puts.Load(); n != 30 {
		t.Errorf("%d events recorded before their ack, want 30 (the slow inbox never failed)", n)
	}
	// Every event is handled: each is marked done.
	ctx := h.waitCtx()
	for {
		in.mu.Lock()
		n := len(in.done)
		in.mu.Unlock()
		if n == 30 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of 30 events handled", n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
