package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// BufferOptions configures a Buffered. Zero fields take their defaults.
//
// The defaults hold about ten minutes of an outage: a write waits, and is
// tried again with backoff, for up to MaxAge while the store cannot be
// reached. The queue is bounded by Size writes and MaxBytes of their text,
// whichever is reached first; past that the oldest write is dropped. Every
// write given up is counted in Dropped and logged.
type BufferOptions struct {
	// Size is how many writes may wait; when it is full the oldest is
	// dropped. Default 10000.
	Size int
	// MaxBytes bounds the memory the waiting writes hold (their text, as
	// estimated from their fields); past it the oldest is dropped. Default
	// 32 MiB.
	MaxBytes int
	// Retries is how many times a write is tried again that the store
	// rejected for its values (ErrRejected) or that made it panic: such a
	// write is unlikely to succeed later, and holding it would stop the
	// writes behind it. Any other failure (the store away, a full disk) is
	// tried again until MaxAge. Default 5; negative means no retries.
	Retries int
	// Backoff is the wait after the first failed attempt; it doubles after
	// each further failure, up to MaxBackoff, and starts again after a
	// success. Default 200ms.
	Backoff time.Duration
	// MaxBackoff caps the wait between attempts, so that writing resumes
	// soon after the store is back. Default 30s.
	MaxBackoff time.Duration
	// MaxAge is how long a write may wait in all; an older one is given up.
	// Default 10m.
	MaxAge time.Duration
	// WriteTimeout bounds each attempt at a write, and each Ping. Default
	// 10s.
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
	if o.MaxBytes <= 0 {
		o.MaxBytes = 32 << 20
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
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.MaxBackoff < o.Backoff {
		o.MaxBackoff = o.Backoff
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
// queue the write and Run writes it in the background, in order, retrying
// with backoff for as long as BufferOptions.MaxAge while the store is away. Everything else, reads included, goes straight to the store:
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
	bytes    int // the size of the queued writes
	inflight int // writes taken from the queue and not yet done

	backoff time.Duration // the wait after the last failure; only Run uses it
	wake    chan struct{} // has a value when the queue may have grown
	dropped atomic.Int64
	failing atomic.Bool
}

// write is one queued write.
type write struct {
	kind   string // "suggestion" or "feedback", for the logs
	size   int    // an estimate of the memory it holds
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
	size := writeOverhead + len(s.Key) + len(s.Channel) + len(s.Thread) + len(s.Source) + len(s.Lang)
	for _, t := range slices.Concat(s.Symptoms, s.Components) {
		size += len(t) + 16
	}
	for _, c := range s.Cases {
		size += len(c.CaseID) + 32
	}
	b.enqueue(write{kind: "suggestion", size: size, do: func(ctx context.Context, st Store) error {
		return st.RecordSuggestion(ctx, s)
	}})
}

// RecordFeedbackAsync queues f to be recorded, without blocking.
func (b *Buffered) RecordFeedbackAsync(f Feedback) {
	size := writeOverhead + len(f.Channel) + len(f.Message) + len(f.User) + len(f.CaseID) + len(f.Vote) + len(f.Query)
	b.enqueue(write{kind: "feedback", size: size, do: func(ctx context.Context, st Store) error {
		_, err := st.RecordFeedback(ctx, f)
		return err
	}})
}

// writeOverhead is the memory a queued write holds besides its text.
const writeOverhead = 256

func (b *Buffered) enqueue(w write) {
	w.queued = b.opts.Now()
	b.mu.Lock()
	var dropped []write
	for len(b.queue) > 0 && (len(b.queue) >= b.opts.Size || b.bytes+w.size > b.opts.MaxBytes) {
		dropped = append(dropped, b.queue[0])
		b.bytes -= b.queue[0].size
		b.queue[0] = write{}
		b.queue = b.queue[1:]
	}
	b.queue = append(b.queue, w)
	b.bytes += w.size
	b.mu.Unlock()
	for _, old := range dropped {
		n := b.dropped.Add(1)
		b.log.Warn("activity write dropped: queue full", "kind", old.kind, "queue_size", b.opts.Size,
			"queue_bytes", b.opts.MaxBytes, "waited", b.opts.Now().Sub(old.queued).Round(time.Second).String(), "dropped", n)
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
	b.bytes -= w.size
	b.inflight++
	return w, true
}

func (b *Buffered) done() {
	b.mu.Lock()
	b.inflight--
	b.mu.Unlock()
}

// deliver writes w, retrying with backoff: until MaxAge while the store
// is away, Retries times when it rejects w. It returns false, with w not
// done, when ctx ends first.
func (b *Buffered) deliver(ctx context.Context, w write) bool {
	rejected := 0
	for {
		if age := b.opts.Now().Sub(w.queued); age > b.opts.MaxAge {
			b.giveUp(w, "too old", fmt.Errorf("waited %v, more than %v", age.Round(time.Millisecond), b.opts.MaxAge))
			b.backoff = 0
			return true
		}
		err := b.try(ctx, w)
		if err == nil {
			b.backoff = 0
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if errors.Is(err, ErrRejected) || errors.Is(err, errPanic) {
			if rejected == b.opts.Retries {
				b.giveUp(w, "rejected by the store", err)
				b.backoff = 0
				return true
			}
			rejected++
		}
		if b.backoff == 0 {
			b.backoff = b.opts.Backoff
		} else {
			b.backoff = min(2*b.backoff, b.opts.MaxBackoff)
		}
		t := time.NewTimer(b.backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// errPanic marks a write that made the store panic.
var errPanic = errors.New("panic")

// try makes one attempt at w, turning a panic in the store into an error.
func (b *Buffered) try(ctx context.Context, w write) (err error) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.WriteTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("record %s: %w: %v", w.kind, errPanic, p)
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
	b.queue, b.bytes = nil, 0
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
