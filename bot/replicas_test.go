package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/digest"
	"github.com/incidentbot/incidentbot/internal/pgtest"
	"github.com/incidentbot/incidentbot/internal/slackfake"
	"github.com/incidentbot/incidentbot/store"
	"github.com/incidentbot/incidentbot/store/postgres"
	"github.com/incidentbot/incidentbot/store/sqlite"
)

// storeState is a bot.State over the activity store, as cmd wires it: each
// replica is an owner with its own handle on the shared database.
type storeState struct {
	store.Store
	owner string
}

func (st storeState) Claim(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	return st.Store.Claim(ctx, key, st.owner, ttl)
}

func (st storeState) ClaimReply(ctx context.Context, channel, thread string, ttl time.Duration) (bool, error) {
	return st.Store.ClaimReply(ctx, channel, thread, st.owner, ttl)
}

func (st storeState) PutReply(ctx context.Context, r store.Reply) error {
	r.Updated = time.Now().UTC()
	return st.Store.PutReply(ctx, r)
}

// backends open handles on one shared store: a SQLite file, and a
// PostgreSQL schema when INCIDENTBOT_TEST_DATABASE_URL is set.
var backends = []struct {
	name string
	open func(t *testing.T) func() store.Store
}{
	{"sqlite", func(t *testing.T) func() store.Store {
		path := filepath.Join(t.TempDir(), "activity.db")
		return func() store.Store {
			s, err := sqlite.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}},
	{"postgres", func(t *testing.T) func() store.Store {
		url := pgtest.Schema(t, "bot")
		return func() store.Store {
			s, err := postgres.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}},
}

// TestOneReplyPerThreadAcrossReplicas contests the reply claim and the
// being-posted marker: two replicas share one store, and each thread gets
// two events at once, its alert at one replica and a message in the thread
// at the other. Both match and race to post the thread's first reply. The
// replies are counted after both replicas drained their queues and stopped.
func TestOneReplyPerThreadAcrossReplicas(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.name, func(t *testing.T) {
			open := backend.open(t)
			fake := slackfake.New()
			t.Cleanup(fake.Close)
			const channels, perChannel = 6, 4
			for i := range channels {
				fake.AddChannel(fmt.Sprintf("C0RACE%d", i), fmt.Sprintf("inc-race-%d", i), false)
			}
			var replicas []*harness
			for i := range 2 {
				st := storeState{Store: open(), owner: fmt.Sprintf("replica-%d", i)}
				replicas = append(replicas, startWith(t, fake, func(o *bot.Options) {
					o.State, o.PostEvery, o.Workers = st, time.Millisecond, 8
					// Every alert here is the same alert again; answer each.
					o.AlertRepeat = time.Nanosecond
				}))
				if err := fake.WaitConnected(replicas[0].waitCtx(), i+1); err != nil {
					t.Fatal(err)
				}
			}
			h := replicas[0]
			type thread struct{ channel, ts string }
			var threads []thread
			var envs []string
			for n := range perChannel {
				for c := range channels {
					ch := fmt.Sprintf("C0RACE%d", c)
					alert := h.event("alertmanager", ch)
					follow := map[string]any{"type": "message", "user": "U0ONCALL", "channel": ch, "channel_type": "channel",
						"ts": fmt.Sprintf("%s%d", alert["ts"].(string)[:14], 900+n), "thread_ts": alert["ts"],
						"text": "pods keep getting OOMKilled and restart in CrashLoopBackOff, exit code 137"}
					threads = append(threads, thread{ch, alert["ts"].(string)})
					envs = append(envs, fake.SendTo(0).SendEvent(alert), fake.SendTo(1).SendEvent(follow))
				}
			}
			for _, id := range envs {
				h.ack(id)
			}
			for _, th := range threads {
				h.reply(map[string]any{"channel": th.channel, "ts": th.ts})
			}
			// The quiet period: both replicas finish every queued event and
			// stop; nothing can be posted after this.
			for i, r := range replicas {
				if err := r.shutdown(); err != nil {
					t.Fatalf("replica %d: %v", i, err)
				}
			}
			dup := 0
			for _, th := range threads {
				if n := h.repliesIn(map[string]any{"channel": th.channel, "ts": th.ts}); n != 1 {
					t.Errorf("thread %s in %s got %d replies from two replicas, want 1", th.ts, th.channel, n)
					dup++
				}
			}
			t.Logf("%d threads, each with an event at both replicas: %d with more than one reply", len(threads), dup)
		})
	}
}

// storeRecorder records into the activity store, as cmd wires it (there
// through a write buffer), and tells rec, which the test waits on.
type storeRecorder struct {
	s   store.Store
	rec *recorder
}

func (r storeRecorder) RecordSuggestionAsync(s store.Suggestion) {
	if err := r.s.RecordSuggestion(context.Background(), s); err != nil {
		panic(err)
	}
	r.rec.RecordSuggestionAsync(s)
}

func (r storeRecorder) RecordFeedbackAsync(f store.Feedback) {
	if _, err := r.s.RecordFeedback(context.Background(), f); err != nil {
		panic(err)
	}
	r.rec.RecordFeedbackAsync(f)
}

// TestPrivacyFromChannelInfo: Slack's channel info is the only thing that
// says two channels are private (their ids do not say, and no event
// carries a channel_type). A message, a shortcut and a vote there stay
// there: out of every other channel's digest and out of every post
// elsewhere, while a public channel's alert, answered in the same test,
// shows up in both.
func TestPrivacyFromChannelInfo(t *testing.T) {
	const (
		hushInc   = "C0HUSHINC" // inc-hush: a private incident channel
		hushChat  = "C0HUSH"    // hush-room: a private channel, not an incident one
		secretRef = "ledger-zebra-7"
	)
	fake := slackfake.New()
	t.Cleanup(fake.Close)
	fake.AddChannel(hushInc, "inc-hush", true)
	fake.AddChannel(hushChat, "hush-room", true)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "activity.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := newRecorder()
	h := startWith(t, fake, func(o *bot.Options) { o.Recorder = storeRecorder{st, rec} })

	// A public alert, answered in its channel.
	pub := h.event("alertmanager", incChannel)
	h.ack(h.fake.SendEvent(pub))
	h.reply(pub)

	// A message in the private incident channel, without channel_type.
	msg := h.event("korean", hushInc)
	delete(msg, "channel_type")
	msg["text"] = msg["text"].(string) + " " + secretRef
	h.ack(h.fake.SendEvent(msg))
	reply := h.reply(msg)
	// Someone marks a case of that reply not relevant.
	h.ack(h.fake.SendInteractive(blockAction("U0VOTER", hushInc, reply, "feedback_not_relevant", "tl-001", "case:tl-001:actions")))
	if _, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "chat.update" && c.TS == reply.TS }); err != nil {
		t.Fatalf("vote not acknowledged: %v", err)
	}

	// The shortcut on a message in the private chat channel, shared there.
	sc := h.event("pagerduty", hushChat)
	delete(sc, "channel_type")
	sc["text"] = "billing is down " + secretRef
	h.ack(h.fake.SendInteractive(map[string]any{
		"type": "message_action", "callback_id": bot.ShortcutID, "trigger_id": "trig-9",
		"user": map[string]any{"id": "U0ASKER"}, "channel": map[string]any{"id": hushChat, "name": "hush-room"}, "message": sc,
	}))
	eph, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "chat.postEphemeral" && c.Channel == hushChat })
	if err != nil {
		t.Fatal(err)
	}
	h.ack(h.fake.SendInteractive(map[string]any{
		"type": "block_actions", "user": map[string]any{"id": "U0ASKER"}, "channel": map[string]any{"id": hushChat},
		"container":    map[string]any{"type": "message", "is_ephemeral": true, "channel_id": hushChat},
		"response_url": h.fake.ResponseURL(),
		"actions":      []any{map[string]any{"type": "button", "action_id": "share_in_thread", "block_id": "reply:actions", "value": shareValue(t, eph)}},
	}))
	h.reply(sc)

	// Everything was recorded, the private ones as private: the public
	// alert, the private message, the shortcut and its share.
	ctx := h.waitCtx()
	if _, err := rec.waitSuggestions(ctx, 4); err != nil {
		t.Fatalf("suggestions not recorded: %v", err)
	}
	week := digest.WeekBefore(time.Now().Add(time.Hour), time.UTC) // the seven days to now
	sugs, err := st.Suggestions(ctx, week.From, week.To)
	if err != nil {
		t.Fatal(err)
	}
	if len(sugs) != 4 {
		t.Fatalf("%d suggestions recorded, want 4: %+v", len(sugs), sugs)
	}
	for _, s := range sugs {
		if (s.Channel == hushInc || s.Channel == hushChat) != s.Private {
			t.Errorf("suggestion in %s recorded with private=%v", s.Channel, s.Private)
		}
	}
	fb, err := st.Feedback(ctx, week.From, week.To)
	if err != nil || len(fb) != 1 || !fb[0].Private {
		t.Errorf("vote in the private channel recorded as %+v, %v", fb, err)
	}

	// The public channel's digest counts the public alert only; the
	// private channel's own digest counts its own activity.
	set, err := cases.Load("../matcher/testdata/library", cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	lib, _ := cases.NewLibrary(set)
	sched := digest.New(digest.Options{Store: st, Library: func() *cases.Library { return lib }})
	pubDigest, err := sched.Compose(ctx, incChannel, week, cases.English)
	if err != nil {
		t.Fatal(err)
	}
	if pubDigest.Suggestions != 1 || pubDigest.Channels != 1 || len(pubDigest.NotRelevant) != 0 {
		t.Errorf("public digest counts %d suggestions in %d channels and %d not-relevant cases; want the one public alert and no vote",
			pubDigest.Suggestions, pubDigest.Channels, len(pubDigest.NotRelevant))
	}
	own, err := sched.Compose(ctx, hushInc, week, cases.English)
	if err != nil {
		t.Fatal(err)
	}
	if own.Suggestions != 2 || len(own.NotRelevant) != 1 {
		t.Errorf("the private channel's own digest counts %d suggestions and %d not-relevant cases, want 2 (the public alert and its own message) and 1", own.Suggestions, len(own.NotRelevant))
	}
	if _, err := h.bot.PostDigest(ctx, incChannel, pubDigest); err != nil {
		t.Fatal(err)
	}

	// Nothing from the private channels was posted anywhere else, and
	// something was: the public reply and the digest.
	elsewhere := 0
	for _, c := range h.fake.Calls("") {
		if c.Channel == "" || c.Channel == hushInc || c.Channel == hushChat {
			continue
		}
		if strings.HasPrefix(c.Method, "chat.") {
			elsewhere++
		}
		body := c.Text + blocksText(c)
		for _, leak := range []string{secretRef, "HikariPool", "billing is down"} {
			if strings.Contains(body, leak) {
				t.Errorf("%s to %s carries %q from a private channel", c.Method, c.Channel, leak)
			}
		}
	}
	if elsewhere < 2 {
		t.Errorf("%d posts outside the private channels: the leak check saw nothing", elsewhere)
	}
}

// shareValue is the value of the "Share in thread" button of a shortcut's
// answer.
func shareValue(t *testing.T, eph slackfake.Call) string {
	t.Helper()
	for _, b := range eph.Blocks {
		if b["type"] != "actions" {
			continue
		}
		for _, e := range b["elements"].([]any) {
			if el := e.(map[string]any); el["action_id"] == "share_in_thread" {
				return el["value"].(string)
			}
		}
	}
	t.Fatalf("no share button in the shortcut's answer:\n%s", blocksText(eph))
	return ""
}

// TestTakeoverOverSharedStore: a replica claimed a thread, marked its reply
// as being posted and stopped, its claim still live. Another replica,
// sharing the store, takes over the event: it asks Slack, and posts only
// when the stopped replica's reply never went out. Replies are counted
// after the replica drained and stopped.
func TestTakeoverOverSharedStore(t *testing.T) {
	for _, backend := range backends {
		for _, wentOut := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/reply went out %v", backend.name, wentOut), func(t *testing.T) {
				open := backend.open(t)
				data, err := os.ReadFile("testdata/events/alertmanager.json")
				if err != nil {
					t.Fatal(err)
				}
				var ev map[string]any
				if err := json.Unmarshal(data, &ev); err != nil {
					t.Fatal(err)
				}
				thread := ev["ts"].(string)
				fake := slackfake.New()
				t.Cleanup(fake.Close)
				ctx := context.Background()
				dead := storeState{Store: open(), owner: "replica-dead"}
				if ok, err := dead.ClaimReply(ctx, incChannel, thread, 30*time.Second); !ok || err != nil {
					t.Fatalf("claim: %v %v", ok, err)
				}
				if err := dead.PutReply(ctx, store.Reply{Channel: incChannel, Thread: thread, CaseIDs: []string{"tl-010"}}); err != nil {
					t.Fatal(err)
				}
				if wentOut {
					api := slack.New("xoxb-other", slack.OptionAPIURL(fake.APIURL()))
					if _, _, err := api.PostMessage(incChannel, slack.MsgOptionText("earlier reply", false), slack.MsgOptionTS(thread)); err != nil {
						t.Fatal(err)
					}
				}
				payload := mustJSON(map[string]any{"type": "event_callback", "event_id": "EvTAKEN", "event": ev})
				inbox := &memInbox{seen: map[string]bool{}, done: map[string]bool{},
					orphaned: []store.InboxItem{{Key: "EvTAKEN", Kind: "events_api", Payload: payload}}}
				st := storeState{Store: open(), owner: "replica-b"}
				h := startWith(t, fake, func(o *bot.Options) {
					o.Inbox, o.OrphanEvery, o.Workers, o.State = inbox, 50*time.Millisecond, 1, st
				})
				if _, err := fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool {
					return c.Method == "conversations.replies" && c.Channel == incChannel
				}); err != nil {
					t.Fatalf("Slack never asked about the thread: %v", err)
				}
				h.barrier()
				if err := h.shutdown(); err != nil {
					t.Fatal(err)
				}
				if n := h.repliesIn(ev); n != 1 {
					t.Errorf("%d replies in the thread, want 1", n)
				}
				r, ok, err := st.GetReply(ctx, incChannel, thread)
				if err != nil || !ok || r.ReplyTS == "" {
					t.Errorf("the thread's reply is not recorded: %+v %v %v", r, ok, err)
				}
			})
		}
	}
}
