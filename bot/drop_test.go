package bot_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/store"
)

// gated is a Searcher whose MatchWith waits until gate is closed, holding the
// worker that called it; entered gets a value as each call begins.
type gated struct {
	bot.Searcher
	gate    chan struct{}
	entered chan struct{}
}

func (g gated) MatchWith(ctx context.Context, text string, top int, opts matcher.MatchOptions) (*matcher.Answer, error) {
	g.entered <- struct{}{}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Searcher.MatchWith(ctx, text, top, opts)
}

// sharedInbox is an inbox that two replicas share, as they share a
// database: what one records and leaves undone, the other can take over.
type sharedInbox struct {
	mu     sync.Mutex
	items  []store.InboxItem
	done   map[string]bool
	taken  map[string]bool
	doneCh chan string
}

func newSharedInbox() *sharedInbox {
	return &sharedInbox{done: map[string]bool{}, taken: map[string]bool{}, doneCh: make(chan string, 100)}
}

// replica is one replica's view of the inbox; only a replica that takes
// over (the survivor of a crash) gets orphans.
type replica struct {
	*sharedInbox
	takeover bool
}

func (r replica) Put(_ context.Context, key, kind string, payload []byte) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range r.items {
		if it.Key == key {
			return false, nil
		}
	}
	r.items = append(r.items, store.InboxItem{Key: key, Kind: kind, Payload: slices.Clone(payload)})
	return true, nil
}

func (r replica) Done(_ context.Context, key string) error {
	r.mu.Lock()
	r.done[key] = true
	r.mu.Unlock()
	r.doneCh <- key
	return nil
}

func (r replica) Renew(context.Context) error { return nil }

func (r replica) Orphans(_ context.Context, limit int) ([]store.InboxItem, error) {
	if !r.takeover {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []store.InboxItem
	for _, it := range r.items {
		if !r.done[it.Key] && !r.taken[it.Key] && len(out) < limit {
			r.taken[it.Key] = true
			out = append(out, it)
		}
	}
	return out, nil
}

// TestDroppedJobsNotTakenOverLater: jobs dropped from a full queue are
// marked done in the inbox at once, so that when the replica dies later the
// one that takes over its events answers only those still waiting, not old
// alerts that were dropped.
func TestDroppedJobsNotTakenOverLater(t *testing.T) {
	in := newSharedInbox()
	g := gated{Searcher: testMatcher(t), gate: make(chan struct{}), entered: make(chan struct{}, 10)}
	defer close(g.gate)
	a := start(t, func(o *bot.Options) {
		o.Workers, o.QueueSize = 1, 1 // one lane holding one job
		o.Inbox = replica{sharedInbox: in}
		o.OrphanEvery = time.Hour
	})
	a.bot.SetSearcher(g)
	var evs []map[string]any
	for i, name := range []string{"alertmanager", "datadog", "grafana", "pagerduty"} {
		ev := a.event(name, incChannel)
		evs = append(evs, ev)
		a.ack(a.fake.SendEventWithID(fmt.Sprint("EvQ", i), ev))
		if i == 0 {
			<-g.entered // the worker holds the first; the lane is empty
		}
	}
	// EvQ1 was queued, then dropped for EvQ2, which was dropped for EvQ3.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var done []string
	for len(done) < 2 {
		select {
		case k := <-in.doneCh:
			done = append(done, k)
		case <-ctx.Done():
			t.Fatalf("events marked done: %q; want the two dropped from the full queue, EvQ1 and EvQ2", done)
		}
	}
	slices.Sort(done)
	if !slices.Equal(done, []string{"EvQ1", "EvQ2"}) {
		t.Fatalf("events marked done: %q, want [EvQ1 EvQ2]", done)
	}

	// The replica dies now, holding EvQ0 and EvQ3. The survivor takes over
	// those two only, in the order they came.
	b := start(t, func(o *bot.Options) {
		o.Workers = 1
		o.Inbox = replica{sharedInbox: in, takeover: true}
		o.OrphanEvery = 20 * time.Millisecond
	})
	b.reply(evs[0])
	b.reply(evs[3])
	for _, i := range []int{1, 2} {
		if n := b.repliesIn(evs[i]); n != 0 {
			t.Errorf("the survivor answered dropped event EvQ%d late (%d replies)", i, n)
		}
	}
}
