package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/incidentbot/incidentbot/store"
)

// fakeStore records the writes it accepts. Each write first asks fail,
// which may block or return an error; nil fail accepts every write.
type fakeStore struct {
	store.Store // reads other than CaseFeedback are not used

	fail func(ctx context.Context, attempt int) error

	mu       sync.Mutex
	attempts int
	written  []string // suggestion keys and feedback users, in order

	attempted chan struct{} // if not nil, gets a value after each attempt
}

// waitAttempts waits for n more attempts; blocking on the channel lets the
// bubble's clock run through Run's backoff.
func (f *fakeStore) waitAttempts(n int) {
	for range n {
		<-f.attempted
	}
	synctest.Wait() // let Run finish with the last attempt
}

func (f *fakeStore) attempt(ctx context.Context, what string) error {
	f.mu.Lock()
	f.attempts++
	n := f.attempts
	f.mu.Unlock()
	var err error
	if f.fail != nil {
		err = f.fail(ctx, n)
	}
	if err == nil {
		f.mu.Lock()
		f.written = append(f.written, what)
		f.mu.Unlock()
	}
	if f.attempted != nil {
		f.attempted <- struct{}{}
	}
	return err
}

func (f *fakeStore) RecordSuggestion(ctx context.Context, s store.Suggestion) error {
	return f.attempt(ctx, s.Key)
}

func (f *fakeStore) RecordFeedback(ctx context.Context, fb store.Feedback) (bool, error) {
	return true, f.attempt(ctx, fb.User)
}

func (f *fakeStore) CaseFeedback(ctx context.Context, caseID string) (int, int, error) {
	return 7, 2, nil
}

func (f *fakeStore) result() (attempts int, written []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts, slices.Clone(f.written)
}

// logBuffer is a log destination that tests read while Run writes to it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// start runs b in the background until the test's bubble ends it; the
// returned stop cancels Run and waits for it.
func start(t *testing.T, b *store.Buffered) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- b.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	}
}

func newBuffered(fake *fakeStore, opts store.BufferOptions) (*store.Buffered, *logBuffer) {
	logs := &logBuffer{}
	return store.NewBuffered(fake, slog.New(slog.NewTextHandler(logs, nil)), opts), logs
}

var errDown = errors.New("database is down")

func TestBufferedRetriesUntilWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &fakeStore{attempted: make(chan struct{}, 100), fail: func(_ context.Context, attempt int) error {
			if attempt <= 3 {
				return errDown
			}
			return nil
		}}
		b, logs := newBuffered(fake, store.BufferOptions{})
		stop := start(t, b)
		defer stop()

		began := time.Now()
		b.RecordSuggestionAsync(store.Suggestion{Key: "s1"})
		b.RecordFeedbackAsync(store.Feedback{User: "U1"})
		b.RecordSuggestionAsync(store.Suggestion{Key: "s2"})
		fake.waitAttempts(6)

		attempts, written := fake.result()
		if want := []string{"s1", "U1", "s2"}; !reflect.DeepEqual(written, want) {
			t.Errorf("written %q, want %q: nothing lost, in order", written, want)
		}
		if attempts != 6 {
			t.Errorf("%d attempts, want 6: three failures, then three writes", attempts)
		}
		// Backoff doubles from the default 200ms: 200 + 400 + 800.
		if waited := time.Since(began); waited != 1400*time.Millisecond {
			t.Errorf("retries took %v, want 1.4s", waited)
		}
		if b.Pending() != 0 || b.Dropped() != 0 || !b.Healthy() {
			t.Errorf("Pending %d, Dropped %d, Healthy %v; want 0, 0, true", b.Pending(), b.Dropped(), b.Healthy())
		}
		if strings.Contains(logs.String(), "level=ERROR") {
			t.Errorf("writes that succeeded on retry were logged as errors:\n%s", logs)
		}
	})
}

// errRejected is a store refusing a write for its values.
var errRejected = fmt.Errorf("%w: value too long for type character varying(64)", store.ErrRejected)

func TestBufferedGivesUpOnRejectedWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &fakeStore{attempted: make(chan struct{}, 100), fail: func(context.Context, int) error { return errRejected }}
		b, logs := newBuffered(fake, store.BufferOptions{Retries: 2, Backoff: time.Second})
		stop := start(t, b)
		defer stop()

		if !b.Healthy() {
			t.Error("Healthy before any write = false, want true")
		}
		began := time.Now()
		b.RecordSuggestionAsync(store.Suggestion{Key: "s1"})
		b.RecordFeedbackAsync(store.Feedback{User: "U1"})
		if took := time.Since(began); took != 0 {
			t.Errorf("queueing writes took %v of the clock, want no wait", took)
		}
		fake.waitAttempts(6)

		attempts, written := fake.result()
		if attempts != 6 || written != nil {
			t.Errorf("%d attempts, written %q; want 6 (1 + 2 retries each), none written", attempts, written)
		}
		if waited := time.Since(began); waited != 6*time.Second {
			t.Errorf("gave up after %v, want 6s (1s + 2s backoff for each write)", waited)
		}
		if b.Healthy() || b.Dropped() != 2 || b.Pending() != 0 {
			t.Errorf("Healthy %v, Dropped %d, Pending %d; want false, 2, 0", b.Healthy(), b.Dropped(), b.Pending())
		}
		out := logs.String()
		for _, want := range []string{"level=ERROR", "kind=suggestion", "kind=feedback", "value too long", `reason="rejected by the store"`} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %s:\n%s", want, out)
			}
		}
	})
}

// downFor is a fail func for a store that is away for d from began.
func downFor(began time.Time, d time.Duration) func(context.Context, int) error {
	return func(context.Context, int) error {
		if time.Since(began) < d {
			return errDown
		}
		return nil
	}
}

// TestBufferedRidesOutOutage: the database is away for 100 s while the bot
// keeps suggesting, one suggestion a second; with the default options
// nothing is lost, order is kept, and writing resumes within the 30 s
// backoff cap of the store coming back.
func TestBufferedRidesOutOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		began := time.Now()
		fake := &fakeStore{fail: downFor(began, 100*time.Second)}
		b, logs := newBuffered(fake, store.BufferOptions{})
		stop := start(t, b)
		defer stop()

		var want []string
		for i := range 120 {
			key := fmt.Sprint("s", i)
			want = append(want, key)
			b.RecordSuggestionAsync(store.Suggestion{Key: key})
			time.Sleep(time.Second)
			if i == 50 && b.Healthy() {
				t.Error("Healthy during the outage")
			}
		}
		time.Sleep(30 * time.Second) // the longest backoff
		synctest.Wait()
		if _, written := fake.result(); !reflect.DeepEqual(written, want) {
			t.Errorf("written %d of %d suggestions (%q…), want all, in order", len(written), len(want), written[:min(3, len(written))])
		}
		if b.Dropped() != 0 || b.Pending() != 0 || !b.Healthy() {
			t.Errorf("Dropped %d, Pending %d, Healthy %v; want 0, 0, true", b.Dropped(), b.Pending(), b.Healthy())
		}
		if strings.Contains(logs.String(), "level=ERROR") {
			t.Errorf("an outage the buffer rode out was logged as an error:\n%s", logs)
		}
	})
}

// TestBufferedOutageLimits shows the default bounds: writes older than 10
// minutes, and the oldest past 10,000 writes or 32 MiB of text, are given
// up, counted and logged.
func TestBufferedOutageLimits(t *testing.T) {
	t.Run("10 minutes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			began := time.Now()
			fake := &fakeStore{fail: downFor(began, 11*time.Minute)}
			b, logs := newBuffered(fake, store.BufferOptions{})
			stop := start(t, b)
			defer stop()
			for i := range 12 { // one a minute, from 0 to 11 minutes
				b.RecordSuggestionAsync(store.Suggestion{Key: fmt.Sprint("m", i)})
				time.Sleep(time.Minute)
			}
			synctest.Wait()
			_, written := fake.result()
			// Written at 11m + up to 30s: m0 (queued at 0) is older than
			// 10m by then, and so is m1 (1m); m2 on are younger.
			if want := []string{"m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10", "m11"}; !reflect.DeepEqual(written, want) {
				t.Errorf("written %q, want %q", written, want)
			}
			if b.Dropped() != 2 || strings.Count(logs.String(), `reason="too old"`) != 2 {
				t.Errorf("Dropped %d, want 2, each logged as too old:\n%s", b.Dropped(), logs)
			}
		})
	})
	t.Run("10000 writes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fake := &fakeStore{fail: func(context.Context, int) error { return errDown }}
			b, logs := newBuffered(fake, store.BufferOptions{})
			stop := start(t, b)
			defer stop()
			// The first write is taken and tried before the rest arrive:
			// otherwise whether the writer has taken it by the time the
			// queue fills depends on the scheduler.
			b.RecordSuggestionAsync(store.Suggestion{Key: "s0"})
			synctest.Wait()
			for i := 1; i < 10005; i++ {
				b.RecordSuggestionAsync(store.Suggestion{Key: fmt.Sprint("s", i)})
			}
			synctest.Wait()
			// One write is being tried; 10,000 wait behind it.
			if b.Dropped() != 4 || b.Pending() != 10001 {
				t.Errorf("Dropped %d, Pending %d; want 4, 10001", b.Dropped(), b.Pending())
			}
			if n := strings.Count(logs.String(), "queue full"); n != 4 {
				t.Errorf("%d drops logged, want 4", n)
			}
		})
	})
	t.Run("32 MiB", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fake := &fakeStore{fail: func(context.Context, int) error { return errDown }}
			b, _ := newBuffered(fake, store.BufferOptions{})
			stop := start(t, b)
			defer stop()
			query := strings.Repeat("x", 16<<10) // a thread's text is kept up to 16 KiB
			for i := range 3000 {
				b.RecordFeedbackAsync(store.Feedback{User: fmt.Sprint("U", i), Query: query})
			}
			synctest.Wait()
			// 32 MiB holds fewer than 2048 votes of 16 KiB, and not much fewer.
			if p := b.Pending(); p >= 2048 || p < 1900 || int64(p)+b.Dropped() != 3000 {
				t.Errorf("Pending %d, Dropped %d; want under 2048 (32 MiB) waiting, the rest dropped", p, b.Dropped())
			}
		})
	})
}

// blocker is a fail func that holds every write until release is closed or
// the write's context ends.
func blocker(release <-chan struct{}) func(ctx context.Context, attempt int) error {
	return func(ctx context.Context, _ int) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func TestBufferedFullQueueDropsOldest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		fake := &fakeStore{fail: blocker(release)}
		b, logs := newBuffered(fake, store.BufferOptions{Size: 3})
		stop := start(t, b)
		defer stop()

		b.RecordSuggestionAsync(store.Suggestion{Key: "s0"})
		synctest.Wait() // s0 is being written; the store holds it
		for i := 1; i <= 5; i++ {
			b.RecordSuggestionAsync(store.Suggestion{Key: fmt.Sprint("s", i)})
		}
		if b.Dropped() != 2 || b.Pending() != 4 {
			t.Errorf("Dropped %d, Pending %d; want 2 (s1, s2), 4 (s0 in flight, s3-s5 queued)", b.Dropped(), b.Pending())
		}
		if got := strings.Count(logs.String(), "queue full"); got != 2 {
			t.Errorf("logged %d drops, want 2:\n%s", got, logs)
		}
		close(release)
		synctest.Wait()
		if _, written := fake.result(); !reflect.DeepEqual(written, []string{"s0", "s3", "s4", "s5"}) {
			t.Errorf("written %q, want [s0 s3 s4 s5]: the oldest queued were dropped", written)
		}
		if b.Pending() != 0 {
			t.Errorf("Pending %d, want 0", b.Pending())
		}
	})
}

func TestBufferedGivesUpOldWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu  sync.Mutex
			now = time.Date(2025, 3, 10, 9, 0, 0, 0, time.UTC)
		)
		clock := func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return now
		}
		release := make(chan struct{})
		fake := &fakeStore{fail: func(ctx context.Context, attempt int) error {
			if attempt == 1 {
				return blocker(release)(ctx, attempt)
			}
			return nil
		}}
		b, logs := newBuffered(fake, store.BufferOptions{Now: clock, MaxAge: time.Minute})
		stop := start(t, b)
		defer stop()

		b.RecordSuggestionAsync(store.Suggestion{Key: "s0"})
		synctest.Wait()
		b.RecordSuggestionAsync(store.Suggestion{Key: "old"})
		mu.Lock()
		now = now.Add(time.Minute + time.Millisecond)
		mu.Unlock()
		b.RecordSuggestionAsync(store.Suggestion{Key: "fresh"})
		close(release)
		synctest.Wait()

		if _, written := fake.result(); !reflect.DeepEqual(written, []string{"s0", "fresh"}) {
			t.Errorf("written %q, want [s0 fresh]: the write that waited too long is given up", written)
		}
		if b.Dropped() != 1 || !strings.Contains(logs.String(), `reason="too old"`) {
			t.Errorf("Dropped %d, want 1, logged as too old:\n%s", b.Dropped(), logs)
		}
	})
}

func TestBufferedFlushesAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		fake := &fakeStore{fail: func(ctx context.Context, attempt int) error {
			if attempt == 1 {
				return blocker(release)(ctx, attempt)
			}
			return nil
		}}
		b, _ := newBuffered(fake, store.BufferOptions{})
		stop := start(t, b)

		b.RecordSuggestionAsync(store.Suggestion{Key: "s0"})
		synctest.Wait() // s0 is held by the store
		b.RecordFeedbackAsync(store.Feedback{User: "U1"})
		b.RecordSuggestionAsync(store.Suggestion{Key: "s1"})
		stop() // cancels s0's attempt; the flush writes all three

		if _, written := fake.result(); !reflect.DeepEqual(written, []string{"s0", "U1", "s1"}) {
			t.Errorf("written %q, want [s0 U1 s1]", written)
		}
		if b.Pending() != 0 || b.Dropped() != 0 {
			t.Errorf("Pending %d, Dropped %d; want 0, 0", b.Pending(), b.Dropped())
		}
	})
}

func TestBufferedFlushIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &fakeStore{fail: blocker(nil)} // holds each write until its context ends
		b, logs := newBuffered(fake, store.BufferOptions{FlushTimeout: 3 * time.Second, WriteTimeout: time.Hour})
		stop := start(t, b)

		b.RecordSuggestionAsync(store.Suggestion{Key: "s0"})
		b.RecordSuggestionAsync(store.Suggestion{Key: "s1"})
		b.RecordFeedbackAsync(store.Feedback{User: "U1"})
		synctest.Wait()
		began := time.Now()
		stop()

		if took := time.Since(began); took != 3*time.Second {
			t.Errorf("Run returned %v after its context ended, want the 3s FlushTimeout", took)
		}
		if b.Dropped() != 3 || b.Pending() != 0 {
			t.Errorf("Dropped %d, Pending %d; want 3, 0", b.Dropped(), b.Pending())
		}
		out := logs.String()
		for _, want := range []string{"lost at shutdown", "kind=suggestion lost=2", "kind=feedback lost=1", "deadline exceeded"} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %q:\n%s", want, out)
			}
		}
	})
}

func TestBufferedSurvivesPanickingStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &fakeStore{fail: func(context.Context, int) error { panic("driver bug") }}
		b, logs := newBuffered(fake, store.BufferOptions{Retries: -1})
		stop := start(t, b)
		defer stop()

		b.RecordSuggestionAsync(store.Suggestion{Key: "s0"})
		synctest.Wait()
		if b.Healthy() || b.Dropped() != 1 || !strings.Contains(logs.String(), "panic: driver bug") {
			t.Errorf("Healthy %v, Dropped %d; want false, 1, and the panic logged:\n%s", b.Healthy(), b.Dropped(), logs)
		}
	})
}

func TestBufferedCopiesLists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []string
		b := store.NewBuffered(&recordingStore{symptoms: &got}, slog.New(slog.DiscardHandler), store.BufferOptions{})
		symptoms := []string{"latency"}
		b.RecordSuggestionAsync(store.Suggestion{Key: "s0", Symptoms: symptoms})
		symptoms[0] = "changed by the caller"
		stop := start(t, b)
		synctest.Wait()
		stop()
		if !reflect.DeepEqual(got, []string{"latency"}) {
			t.Errorf("store got symptoms %q, want the value at the time of the call", got)
		}
	})
}

// recordingStore keeps the symptoms of the suggestions written.
type recordingStore struct {
	store.Store
	symptoms *[]string
}

func (r *recordingStore) RecordSuggestion(ctx context.Context, s store.Suggestion) error {
	*r.symptoms = append(*r.symptoms, s.Symptoms...)
	return nil
}

func TestBufferedReadsGoToTheStore(t *testing.T) {
	b, _ := newBuffered(&fakeStore{}, store.BufferOptions{})
	if h, n, err := b.CaseFeedback(t.Context(), "pg"); h != 7 || n != 2 || err != nil {
		t.Errorf("CaseFeedback = %d, %d, %v; want the store's 7, 2, nil", h, n, err)
	}
}

// inboxStore records the inbox calls it is given.
type inboxStore struct {
	store.Store
	calls []string
}

func (s *inboxStore) InboxPut(ctx context.Context, item store.InboxItem, lease time.Duration) (bool, error) {
	s.calls = append(s.calls, fmt.Sprintf("put %s for %v", item.Key, lease))
	return true, nil
}

func (s *inboxStore) InboxDone(ctx context.Context, key string) error {
	s.calls = append(s.calls, "done "+key)
	return nil
}

func (s *inboxStore) InboxOrphans(ctx context.Context, owner string, lease time.Duration, limit int) ([]store.InboxItem, error) {
	s.calls = append(s.calls, fmt.Sprintf("orphans for %s, %v, %d", owner, lease, limit))
	return []store.InboxItem{{Key: "Ev0"}}, nil
}

// TestBufferedInboxGoesToTheStore checks that the inbox is not buffered:
// an event must be recorded before it is acked, so with Run not even started
// each call reaches the store before it returns.
func TestBufferedInboxGoesToTheStore(t *testing.T) {
	fake := &inboxStore{}
	b := store.NewBuffered(fake, slog.New(slog.DiscardHandler), store.BufferOptions{})
	ctx := t.Context()
	if ok, err := b.InboxPut(ctx, store.InboxItem{Key: "Ev1"}, time.Minute); !ok || err != nil {
		t.Errorf("InboxPut = %v, %v; want the store's true, nil", ok, err)
	}
	if err := b.InboxDone(ctx, "Ev1"); err != nil {
		t.Errorf("InboxDone: %v", err)
	}
	if got, err := b.InboxOrphans(ctx, "r2", time.Hour, 5); len(got) != 1 || err != nil {
		t.Errorf("InboxOrphans = %+v, %v; want the store's one item", got, err)
	}
	want := []string{"put Ev1 for 1m0s", "done Ev1", "orphans for r2, 1h0m0s, 5"}
	if !reflect.DeepEqual(fake.calls, want) || b.Pending() != 0 {
		t.Errorf("store got %q with %d pending, want %q with none", fake.calls, b.Pending(), want)
	}
}
