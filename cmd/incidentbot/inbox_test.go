package main

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"
)

// purgeRecorder records the cut-offs InboxPurge is given.
type purgeRecorder struct{ cuts []time.Time }

func (p *purgeRecorder) InboxPurge(_ context.Context, before time.Time) (int64, error) {
	p.cuts = append(p.cuts, before)
	return 0, nil
}

// TestInboxKeptOneHour: inbox events are deleted once an hour old, checked
// at start and every 10 minutes.
func TestInboxKeptOneHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &purgeRecorder{}
		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		done := make(chan error)
		go func() { done <- purgeInbox(ctx, rec, time.Now, slog.New(slog.DiscardHandler)) }()
		time.Sleep(25 * time.Minute)
		cancel()
		<-done
		want := []time.Time{start.Add(-time.Hour), start.Add(-50 * time.Minute), start.Add(-40 * time.Minute)}
		if len(rec.cuts) != len(want) {
			t.Fatalf("InboxPurge called %d times in 25 minutes, want 3: %v", len(rec.cuts), rec.cuts)
		}
		for i := range want {
			if !rec.cuts[i].Equal(want[i]) {
				t.Errorf("purge %d deleted events before %v, want %v (one hour before)", i, rec.cuts[i].Sub(start), want[i].Sub(start))
			}
		}
	})
}
