package store

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// BufferOptions configures a Buffered. Zero fields take their defaults.
type BufferOptions struct {
	// Size is how many writes may wait; when it is full the oldest is
	// dropped. Default 10000.
	Size int
	// Retries is how many times a failed write is tried again before it is
	// given up. Default 5; negative means no retries.
	Retries int
	// Backoff is the wait before the first retry; it doubles for each
	// further one. Default 200ms.
	Backoff time.Duration
	// MaxAge is how long a write may wait in all; an older one is given up.
	// Default 10m.
	MaxAge time.Duration
	// WriteTimeout bounds each attempt at a write. Default 10s.
	WriteTimeout time.Duration
	// FlushTimeout bounds how long Run goes on writing what is queued after
	// its context ends. Default 5s.
	FlushTimeout time.Duration
	// Now is the clock that MaxAge is measured on. Default time.Now.
	Now func() time.Time
}

func (o BufferOptions) withDefaults() BufferOptions {
	if o.Size <= 0 {
		o.Size = 10000
	}
	switch {
	case o.Retries == 0:
		o.Retries = 5
	case o.Retries < 0:
		o.Retries = 0
	}
	if o.Backoff <= 0 {
		o.Backoff = 200 * time.Millisecond
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 10 * time.Minute
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.FlushTimeout <= 0 {
		o.FlushTimeout = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Buffered wraps a Store so that recording activity while handling an event
// never blocks on, or fails with, a slow or failing store: the Async methods
// queue the write and Run writes it in the background, retrying with
// backoff. Everything else, reads included, goes straight to the store:
// the inbox above all, whose InboxPut must be durable before the event is
// acked.
//
// Writes given up are logged and counted in Dropped. Trying a write again is
// safe because recording is idempotent.
type Buffered struct {
	Store
	log  *slog.Logger
	opts BufferOptions

	mu       sync.Mutex
	queue    []write
	inflight int // writes taken from the queue and not yet done

	wake    chan struct{} // has a value when the queue may have grown
	dropped atomic.Int64
	failing atomic.Bool
}

// write is one queued write.
type write struct {
	kind   string // "suggestion" or "feedback", for the logs
	queued time.Time
	do     func(ctx context.Context, s Store) error
}

// NewBuffered returns a Buffered around s that logs to log. Call Run to
// write what is queued.
func NewBuffered(s Store, log *slog.Logger, opts BufferOptions) *Buffered {
	return &Buffered{
		Store: s,
		log:   log,
		opts:  opts.withDefaults(),
		wake:  make(chan struct{}, 1),
	}
}

// RecordSuggestionAsync queues s to be recorded, without blocking.
func (b *Buffered) RecordSuggestionAsync(s Suggestion) {
	s.Symptoms, s.Components, s.Cases = slices.Clone(s.Symptoms), slices.Clone(s.Components), slices.Clone(s.Cases)
	b.enqueue(write{kind: "suggestion", do: func(ctx context.Context, st Store) error {
		return st.RecordSuggestion(ctx, s)
	}})
}

// RecordFeedbackAsync queues f to be recorded, without blocking.
func (b *Buffered) RecordFeedbackAsync(f Feedback) {
	b.enqueue(write{kind: "feedback", do: func(ctx context.Context, st Store) error {
		_, err := st.RecordFeedback(ctx, f)
		return err
	}})
}

func (b *Buffered) enqueue(w write) {
	w.queued = b.opts.Now()
	b.mu.Lock()
	var oldest write
	full := len(b.queue) >= b.opts.Size
	if full {
		oldest = b.queue[0]
		b.queue[0] = write{}
		b.queue = b.queue[1:]
	}
	b.queue = append(b.queue, w)
	b.mu.Unlock()
	if full {
		n := b.dropped.Add(1)
		b.log.Warn("activity write dropped: queue full", "kind", oldest.kind, "queue_size", b.opts.Size, "dropped", n)
	}
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Pending returns how many writes are queued or being written.
func (b *Buffered) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue) + b.inflight
}

// Dropped returns how many writes were given up: dropped from a full
// queue, too old, failed after every retry, or left at shutdown.
func (b *Buffered) Dropped() int64 { return b.dropped.Load() }

// Healthy reports whether the last attempt at a write succeeded (true
// before any attempt).
func (b *Buffered) Healthy() bool { return !b.failing.Load() }

// Run writes queued writes until ctx ends, then for at most FlushTimeout
// writes what is still queued, and returns nil. Call it once.
func (b *Buffered) Run(ctx context.Context) error {
	for {
		w, ok := b.take()
		if !ok {
			select {
			case <-ctx.Done():
				b.flush(ctx, nil)
				return nil
			case <-b.wake:
				continue
			}
		}
		if !b.deliver(ctx, w) {
			b.flush(ctx, &w)
			return nil
		}
		b.done()
	}
}

// take removes the oldest write from the queue and counts it in flight.
func (b *Buffered) take() (write, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		return write{}, false
	}
	w := b.queue[0]
	b.queue[0] = write{}
	b.queue = b.queue[1:]
	b.inflight++
	return w, true
}

func (b *Buffered) done() {
	b.mu.Lock()
	b.inflight--
	b.mu.Unlock()
}

// deliver writes w, retrying with backoff. It returns false, with w not
// done, when ctx ends first.
func (b *Buffered) deliver(ctx context.Context, w write) bool {
	backoff := b.opts.Backoff
	for attempt := 0; ; attempt++ {
		if age := b.opts.Now().Sub(w.queued); age > b.opts.MaxAge {
			b.giveUp(w, "too old", fmt.Errorf("waited %v, more than %v", age.Round(time.Millisecond), b.opts.MaxAge))
			return true
		}
		err := b.try(ctx, w)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if attempt == b.opts.Retries {
			b.giveUp(w, "failed", err)
			return true
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		backoff *= 2
	}
}

// try makes one attempt at w, turning a panic in the store into an error.
func (b *Buffered) try(ctx context.Context, w write) (err error) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.WriteTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("record %s: panic: %v", w.kind, p)
		}
		b.failing.Store(err != nil)
	}()
	return w.do(ctx, b.Store)
}

func (b *Buffered) giveUp(w write, reason string, err error) {
	n := b.dropped.Add(1)
	b.log.Error("activity write given up", "kind", w.kind, "reason", reason, "err", err, "dropped", n)
}

// flush makes one attempt at each pending write, first, if any, then the
// queued ones, until one fails or FlushTimeout passes; the rest are given
// up.
func (b *Buffered) flush(ctx context.Context, first *write) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.opts.FlushTimeout)
	defer cancel()
	var (
		lost []write
		err  error
	)
	if first != nil {
		if err = b.try(ctx, *first); err != nil {
			lost = append(lost, *first)
		}
		b.done()
	}
	for err == nil {
		w, ok := b.take()
		if !ok {
			return
		}
		if err = b.try(ctx, w); err != nil {
			lost = append(lost, w)
		}
		b.done()
	}
	b.mu.Lock()
	lost = append(lost, b.queue...)
	b.queue = nil
	b.mu.Unlock()
	b.dropped.Add(int64(len(lost)))
	count := map[string]int{}
	for _, w := range lost {
		count[w.kind]++
	}
	for _, kind := range []string{"suggestion", "feedback"} {
		if count[kind] > 0 {
			b.log.Error("activity writes lost at shutdown", "kind", kind, "lost", count[kind], "err", err)
		}
	}
}
