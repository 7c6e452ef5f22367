package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/store"
)

// clock is a settable clock for the in-memory state.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// replica is one replica's view of the protocol over a shared state; slack
// is the bot's reply Slack knows of in the thread ("" for none).
func replica(st State, clk *clock, slack *atomic.Value) *firstReply {
	return &firstReply{state: st, ttl: 30 * time.Second, now: clk.now, log: slog.New(slog.DiscardHandler),
		find: func(context.Context, string, string) string { s, _ := slack.Load().(string); return s }}
}

// TestFirstReplyOneReplicaPostsAmongMany: four replicas all find a thread
// without a reply (they looked at the same moment), then race to post: the
// claim lets one through.
func TestFirstReplyOneReplicaPostsAmongMany(t *testing.T) {
	for round := range 20 {
		clk := &clock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
		st := newMemState(clk.now)
		var slack atomic.Value
		var sends atomic.Int32
		var looked sync.WaitGroup
		looked.Add(4)
		var wg sync.WaitGroup
		for range 4 {
			f := replica(st, clk, &slack)
			wg.Go(func() {
				ctx := context.Background()
				_, ts, err := f.look(ctx, "C1", "1.0001", false)
				looked.Done()
				if err != nil || ts != threadOpen {
					t.Errorf("look = %v, %v before anyone posted", ts, err)
					return
				}
				looked.Wait()
				_, _ = f.post(ctx, store.Reply{Channel: "C1", Thread: "1.0001", CaseIDs: []string{"tl-001"}}, false, func(context.Context) (string, error) {
					return fmt.Sprintf("2.%04d", sends.Add(1)), nil
				})
			})
		}
		wg.Wait()
		if n := sends.Load(); n != 1 {
			t.Fatalf("round %d: %d replicas posted the thread's first reply, want 1", round, n)
		}
	}
}

func TestFirstReplyMarkedWhileSending(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	st := newMemState(clk.now)
	var slack atomic.Value
	a, b := replica(st, clk, &slack), replica(st, clk, &slack)
	ctx := context.Background()
	sent, err := a.post(ctx, store.Reply{Channel: "C1", Thread: "1.0001"}, false, func(ctx context.Context) (string, error) {
		r, ok, _ := st.GetReply(ctx, "C1", "1.0001")
		if !ok || r.ReplyTS != "" {
			t.Errorf("no being-posted marker while sending: %+v %v", r, ok)
		}
		// Another replica sees the thread as busy.
		if _, ts, _ := b.look(ctx, "C1", "1.0001", false); ts != threadBusy {
			t.Errorf("another replica sees %v while the reply is being posted, want busy", ts)
		}
		return "2.0001", nil
	})
	if !sent || err != nil {
		t.Fatalf("post = %v, %v", sent, err)
	}
	r, ts, _ := b.look(ctx, "C1", "1.0001", false)
	if ts != threadAnswered || r.ReplyTS != "2.0001" {
		t.Errorf("after posting: %v %+v", ts, r)
	}
}

func TestFirstReplyStoppedPosterAsksSlack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		age    time.Duration // of the marker
		orphan bool
		slack  string // the reply Slack has
		want   threadState
	}{
		{"fresh marker is another replica's", time.Second, false, "", threadBusy},
		{"fresh marker of a stopped replica, reply out", time.Second, true, "2.0009", threadAnswered},
		{"fresh marker of a stopped replica, no reply", time.Second, true, "", threadTakeover},
		{"stale marker, reply out", time.Minute, false, "2.0009", threadAnswered},
		{"stale marker, no reply", time.Minute, false, "", threadTakeover},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
			st := newMemState(clk.now)
			var slack atomic.Value
			slack.Store(tc.slack)
			asked := 0
			f := replica(st, clk, &slack)
			find := f.find
			f.find = func(ctx context.Context, ch, th string) string { asked++; return find(ctx, ch, th) }
			ctx := context.Background()
			// A replica claimed the thread, marked the reply and stopped.
			if ok, _ := st.ClaimReply(ctx, "C1", "1.0001", 30*time.Second); !ok {
				t.Fatal("claim")
			}
			st.PutReply(ctx, store.Reply{Channel: "C1", Thread: "1.0001", CaseIDs: []string{"tl-001"}})
			clk.advance(tc.age)
			r, ts, err := f.look(ctx, "C1", "1.0001", tc.orphan)
			if err != nil || ts != tc.want {
				t.Fatalf("look = %v, %v; want %v", ts, err, tc.want)
			}
			if tc.want == threadBusy && asked != 0 || tc.want != threadBusy && asked != 1 {
				t.Errorf("asked Slack %d times", asked)
			}
			if tc.want == threadAnswered {
				if saved, _, _ := st.GetReply(ctx, "C1", "1.0001"); r.ReplyTS != tc.slack || saved.ReplyTS != tc.slack {
					t.Errorf("reply found in Slack not recorded: %+v, saved %+v", r, saved)
				}
			}
			if tc.want != threadTakeover {
				return
			}
			// Taking over posts without the stopped replica's claim (it may
			// still live), once.
			sends := 0
			sent, err := f.post(ctx, r, true, func(context.Context) (string, error) { sends++; return "2.0010", nil })
			if !sent || err != nil || sends != 1 {
				t.Errorf("takeover post = %v, %v, %d sends", sent, err, sends)
			}
			if r, ts, _ := f.look(ctx, "C1", "1.0001", false); ts != threadAnswered || r.ReplyTS != "2.0010" {
				t.Errorf("after takeover: %v %+v", ts, r)
			}
		})
	}
}

// failing is a State whose every call fails.
type failing struct{}

var errDown = errors.New("database is down")

func (failing) Claim(context.Context, string, time.Duration) (bool, error) { return false, errDown }
func (failing) ClaimReply(context.Context, string, string, time.Duration) (bool, error) {
	return false, errDown
}
func (failing) PutReply(context.Context, store.Reply) error { return errDown }
func (failing) GetReply(context.Context, string, string) (store.Reply, bool, error) {
	return store.Reply{}, false, errDown
}
func (failing) PutShare(context.Context, store.Share) error { return errDown }
func (failing) GetShare(context.Context, string) (store.Share, bool, error) {
	return store.Share{}, false, errDown
}

func TestFirstReplyPostsWhenStateFails(t *testing.T) {
	var slack atomic.Value
	f := replica(failing{}, &clock{}, &slack)
	ctx := context.Background()
	_, ts, err := f.look(ctx, "C1", "1.0001", false)
	if ts != threadOpen || err == nil {
		t.Fatalf("look = %v, %v; want open with the error", ts, err)
	}
	sent, err := f.post(ctx, store.Reply{Channel: "C1", Thread: "1.0001"}, false, func(context.Context) (string, error) { return "2.0001", nil })
	if !sent || err != nil {
		t.Errorf("post = %v, %v: a lost answer is worse than a rare duplicate", sent, err)
	}
}
