package digest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/store"
)

// DefaultSpec is when a digest is posted unless told otherwise: Monday
// 09:00 UTC.
const DefaultSpec = "0 9 * * MON"

// Target is a channel that gets a digest, when, and in which language.
type Target struct {
	Channel  string
	Spec     string // cron spec, with an optional CRON_TZ= prefix
	Lang     cases.Lang
	Location *time.Location
	schedule cron.Schedule
}

// ParseTarget reads a target written as CHANNEL[;SPEC[;LANG]], for example
// "C0123ABCD;CRON_TZ=Asia/Seoul 0 9 * * MON;ko". An invalid spec is an
// error that names it.
func ParseTarget(s string) (Target, error) {
	parts := strings.Split(s, ";")
	t := Target{Channel: strings.TrimSpace(parts[0]), Spec: DefaultSpec, Lang: cases.English}
	if t.Channel == "" || strings.ContainsAny(t.Channel, " \t") {
		return Target{}, fmt.Errorf("digest target %q: start with a channel id, e.g. C0123ABCD;CRON_TZ=Asia/Seoul 0 9 * * MON;ko", s)
	}
	if len(parts) > 1 && strings.TrimSpace(parts[1]) != "" {
		t.Spec = strings.TrimSpace(parts[1])
	}
	if len(parts) > 2 && strings.TrimSpace(parts[2]) != "" {
		t.Lang = cases.Lang(strings.TrimSpace(parts[2]))
	}
	if len(parts) > 3 {
		return Target{}, fmt.Errorf("digest target %q: too many parts; write CHANNEL;SPEC;LANG", s)
	}
	if t.Lang != cases.English && t.Lang != cases.Korean {
		return Target{}, fmt.Errorf("digest target %q: language %q must be en or ko", s, t.Lang)
	}
	sched, loc, err := parseSpec(t.Spec)
	if err != nil {
		return Target{}, fmt.Errorf("digest target %q: cron spec %q: %w", s, t.Spec, err)
	}
	t.schedule, t.Location = sched, loc
	return t, nil
}

// parseSpec parses a standard cron spec with an optional CRON_TZ= or TZ=
// prefix. robfig/cron panics on some malformed specs; that becomes an error.
func parseSpec(spec string) (sched cron.Schedule, loc *time.Location, err error) {
	defer func() {
		if r := recover(); r != nil {
			sched, loc, err = nil, nil, fmt.Errorf("not a cron spec (%v)", r)
		}
	}()
	loc = time.UTC
	rest := spec
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		if strings.HasPrefix(rest, prefix) {
			name, tail, ok := strings.Cut(rest[len(prefix):], " ")
			if !ok {
				return nil, nil, errors.New("a time zone needs a schedule after it")
			}
			l, lerr := time.LoadLocation(name)
			if lerr != nil {
				return nil, nil, fmt.Errorf("unknown time zone %q", name)
			}
			loc, rest = l, tail
		}
	}
	sched, err = cron.ParseStandard("CRON_TZ=" + loc.String() + " " + rest)
	if err != nil {
		return nil, nil, err
	}
	return sched, loc, nil
}

// Next returns the target's next run after t.
func (t Target) Next(after time.Time) time.Time { return t.schedule.Next(after).In(t.Location) }

// Prev returns the target's last run at or before t, or the zero time when
// there was none in the eight days before it.
func (t Target) Prev(at time.Time) time.Time {
	var last time.Time
	for n := t.schedule.Next(at.Add(-8 * 24 * time.Hour)); !n.IsZero() && !n.After(at); n = t.schedule.Next(n) {
		last = n
	}
	return last
}

// Store is what the scheduler needs of the activity store.
type Store interface {
	Suggestions(ctx context.Context, from, to time.Time) ([]store.Suggestion, error)
	Feedback(ctx context.Context, from, to time.Time) ([]store.Feedback, error)
	ClaimDigest(ctx context.Context, target, week, owner string, lease time.Duration) (bool, error)
	MarkDigestPosted(ctx context.Context, target, week, owner, messageTS string, at time.Time) error
	DigestPosted(ctx context.Context, target, week string) (store.DigestRecord, bool, error)
}

// Poster posts a digest to a channel and returns the message's ts.
type Poster interface {
	PostDigest(ctx context.Context, channel string, d *Digest) (string, error)
}

// Options configure a Scheduler.
type Options struct {
	Targets []Target
	Store   Store
	Poster  Poster
	Library func() *cases.Library // the current case library
	Owner   string                // this replica's name, for digest claims
	Grace   time.Duration         // a run missed by less than this is made up at start; default 12h
	Lease   time.Duration         // how long a claim to compose a digest lasts; default 10m
	// Backoff is the first wait after a failed post, doubled after each
	// further failure up to half the lease. Posting is tried until the
	// grace period after the run ends. Default 30s.
	Backoff time.Duration
	Logger  *slog.Logger
	Now     func() time.Time // the clock; time.Now by default
}

// Scheduler posts each target's digest on its schedule, exactly once per
// target and week even across restarts and replicas.
type Scheduler struct {
	o  Options
	mu sync.Mutex // one digest composed at a time in this process
}

// New makes a scheduler.
func New(o Options) *Scheduler {
	if o.Grace == 0 {
		o.Grace = 12 * time.Hour
	}
	if o.Lease == 0 {
		o.Lease = 10 * time.Minute
	}
	if o.Backoff <= 0 {
		o.Backoff = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Scheduler{o: o}
}

// cronLogger adapts slog to robfig/cron's logger.
type cronLogger struct{ log *slog.Logger }

func (l cronLogger) Info(msg string, kv ...any) { l.log.Debug("cron: "+msg, kv...) }
func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error("cron: "+msg, append(kv, "err", err)...)
}

// Run makes up digests missed within the grace period, then posts each on
// its schedule until ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	if len(s.o.Targets) == 0 {
		<-ctx.Done()
		return nil
	}
	// Missed runs are made up in the background: one that waits out a
	// Slack outage must not hold up the schedule.
	var makeup sync.WaitGroup
	defer makeup.Wait()
	now := s.o.Now()
	for _, t := range s.o.Targets {
		if prev := t.Prev(now); !prev.IsZero() && now.Sub(prev) <= s.o.Grace {
			makeup.Go(func() {
				if _, err := s.Post(ctx, t, prev); err != nil && ctx.Err() == nil {
					s.o.Logger.Error("making up a missed digest failed", "channel", t.Channel, "err", err)
				}
			})
		}
	}
	logger := cronLogger{s.o.Logger}
	c := cron.New(cron.WithChain(cron.Recover(logger), cron.SkipIfStillRunning(logger)), cron.WithLogger(logger))
	for _, t := range s.o.Targets {
		c.Schedule(t.schedule, cron.FuncJob(func() {
			run := s.o.Now()
			if _, err := s.Post(ctx, t, run); err != nil && ctx.Err() == nil {
				s.o.Logger.Error("posting a digest failed", "channel", t.Channel, "err", err)
			}
		}))
	}
	c.Start()
	<-ctx.Done()
	<-c.Stop().Done()
	return nil
}

// Post posts target's digest for the week before run, exactly once across
// replicas, and reports whether this call posted it.
//
// A replica posts only while it holds the week's claim. A failed post is
// tried again after a backoff, the claim renewed before each attempt, until
// the grace period after run ends: a short Slack outage delays the digest
// instead of losing it. A replica that finds the claim held by another
// keeps checking on the same backoff until the digest is posted: when the
// holder stops, its claim lapses after the lease and this replica
// completes the week. Post returns when the digest is posted, the grace
// period ends (an error for the replica that could not post) or ctx ends.
func (s *Scheduler) Post(ctx context.Context, t Target, run time.Time) (bool, error) {
	week := WeekBefore(run, t.Location)
	deadline := run.Add(s.o.Grace)
	wait := s.o.Backoff
	for attempt := 1; ; attempt++ {
		posted, done, err := s.attempt(ctx, t, week)
		if done {
			return posted, err
		}
		if err != nil {
			s.o.Logger.Warn("posting a digest failed; trying again", "channel", t.Channel, "week", week.Key,
				"attempt", attempt, "retry_in", wait, "err", err)
		}
		if s.o.Now().Add(wait).After(deadline) {
			if err != nil {
				return false, fmt.Errorf("digest %s for %s not posted within the grace period (%d attempts): %w", week.Key, t.Channel, attempt, err)
			}
			s.o.Logger.Warn("digest not posted within the grace period by the replica holding it", "channel", t.Channel, "week", week.Key)
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, max(s.o.Lease/2, s.o.Backoff))
	}
}

// attempt makes one attempt at posting a week's digest. done reports that
// Post has nothing left to do: the digest is posted (by this call when
// posted is true) or err cannot be cured by waiting. When done is false, err
// is the failure to try again after, or nil when another replica holds the
// claim.
func (s *Scheduler) attempt(ctx context.Context, t Target, week Week) (posted, done bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, posted, err := s.o.Store.DigestPosted(ctx, t.Channel, week.Key); err != nil {
		return false, false, fmt.Errorf("digest %s for %s: %w", week.Key, t.Channel, err)
	} else if posted {
		return false, true, nil
	}
	// Claiming again renews this replica's own claim.
	ok, err := s.o.Store.ClaimDigest(ctx, t.Channel, week.Key, s.o.Owner, s.o.Lease)
	if err != nil {
		return false, false, fmt.Errorf("claim digest %s for %s: %w", week.Key, t.Channel, err)
	}
	if !ok {
		s.o.Logger.Info("digest is being posted elsewhere", "channel", t.Channel, "week", week.Key)
		return false, false, nil
	}
	d, err := s.Compose(ctx, t.Channel, week, t.Lang)
	if err != nil {
		return false, false, err
	}
	ts, err := s.o.Poster.PostDigest(ctx, t.Channel, d)
	if err != nil {
		return false, false, fmt.Errorf("post digest %s to %s: %w", week.Key, t.Channel, err)
	}
	if err := s.o.Store.MarkDigestPosted(ctx, t.Channel, week.Key, s.o.Owner, ts, s.o.Now()); err != nil {
		// Posted: trying again would post it twice.
		return true, true, fmt.Errorf("record digest %s for %s as posted: %w", week.Key, t.Channel, err)
	}
	s.o.Logger.Info("digest posted", "channel", t.Channel, "week", week.Key)
	return true, true, nil
}

// Compose builds the digest of week for channel from the store.
func (s *Scheduler) Compose(ctx context.Context, channel string, week Week, lang cases.Lang) (*Digest, error) {
	this, err := s.o.Store.Suggestions(ctx, week.From, week.To)
	if err != nil {
		return nil, fmt.Errorf("read this week's suggestions: %w", err)
	}
	prev, err := s.o.Store.Suggestions(ctx, week.From.AddDate(0, 0, -7), week.From)
	if err != nil {
		return nil, fmt.Errorf("read last week's suggestions: %w", err)
	}
	fb, err := s.o.Store.Feedback(ctx, week.From, week.To)
	if err != nil {
		return nil, fmt.Errorf("read feedback: %w", err)
	}
	return Compose(Input{Target: channel, Lang: lang, Week: week, This: this, Prev: prev, Feedback: fb, Library: s.o.Library()}), nil
}

// Targets returns the configured targets.
func (s *Scheduler) Targets() []Target { return s.o.Targets }

// Target returns the configured target for channel, if any.
func (s *Scheduler) Target(channel string) (Target, bool) {
	for _, t := range s.o.Targets {
		if t.Channel == channel {
			return t, true
		}
	}
	return Target{}, false
}
