package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/digest"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/store"
)

// botCmd is "incidentbot run": the Slack bot. Its tokens come only from
// the environment (SLACK_APP_TOKEN, SLACK_BOT_TOKEN), never from flags.
type botCmd struct {
	libFlags
	Channels    string   `name:"channels" default:"inc-*,incident-*" env:"INCIDENTBOT_CHANNELS" help:"Incident channel name patterns, comma-separated."`
	ChannelIDs  string   `name:"channel-ids" env:"INCIDENTBOT_CHANNEL_IDS" help:"Incident channel ids, comma-separated, beside the patterns."`
	Floor       float64  `name:"floor" default:"${floor}" env:"INCIDENTBOT_FLOOR" help:"Confidence floor, above 0 and below 1: cases scoring lower are not suggested."`
	Top         int      `name:"top" default:"3" env:"INCIDENTBOT_TOP" help:"Cases per reply, 1 to 10."`
	Lang        string   `name:"lang" default:"en" enum:"en,ko" env:"INCIDENTBOT_LANG" help:"Reply language when the text does not tell: en or ko."`
	Listen      string   `name:"listen" default:"127.0.0.1:8080" env:"INCIDENTBOT_LISTEN" help:"Address of /livez, /readyz, /healthz and /metrics (no authentication: loopback by default; :8080 in a container); empty turns them off (--listen=\"\")."`
	IndexDir    string   `name:"index-dir" env:"INCIDENTBOT_INDEX_DIR" help:"Keep the search index on disk here, reused while the library is unchanged; empty: in memory (a library of more than 2,000 cases is built in $TMPDIR, removed once open)."`
	Workers     int      `name:"workers" default:"4" env:"INCIDENTBOT_WORKERS" help:"Events handled at once, 1 to 256."`
	LogLevel    string   `name:"log-level" default:"info" enum:"debug,info,warn,error" env:"INCIDENTBOT_LOG_LEVEL" help:"debug, info, warn or error."`
	LogFormat   string   `name:"log-format" default:"text" enum:"text,json" env:"INCIDENTBOT_LOG_FORMAT" help:"text or json."`
	InboxLease  duration `name:"inbox-lease" default:"60s" env:"INCIDENTBOT_INBOX_LEASE" help:"How long the events of a replica that stopped wait before another replica takes them over (2s to 1h); a living replica renews its own."`
	Retention   duration `name:"retention" default:"180d" env:"INCIDENTBOT_RETENTION" help:"Delete activity older than this, e.g. 180d or 720h (7d to 100 years: the weekly digest reads the last seven days)."`
	DigestGrace duration `name:"digest-grace" default:"12h" env:"INCIDENTBOT_DIGEST_GRACE" help:"Post a digest missed while the bot was down if it starts within this long after (0 to 7d)."`
	AdminGroup  string   `name:"admin-group" env:"INCIDENTBOT_ADMIN_GROUP" placeholder:"ID" help:"Slack user group id (S…) whose members may delete any team case; others may delete only the cases they captured."`
	APIAddr     string   `name:"api-addr" env:"INCIDENTBOT_API_ADDR" placeholder:"ADDR" help:"Also serve the HTTP API, MCP (/mcp) and the library page here, as incidentbot serve does, e.g. 127.0.0.1:8088; empty: not served. Beyond loopback INCIDENTBOT_API_TOKEN is required."`
	apiFlags
	storeFlags
	digestFlags
	teamFlags
}

// Bounds of run's numeric flags.
const (
	maxTop        = 10
	maxWorkers    = 256
	minInboxLease = 2 * time.Second
	maxInboxLease = time.Hour
	minRetention  = 7 * 24 * time.Hour
	maxRetention  = 100 * 365 * 24 * time.Hour
	maxGrace      = 7 * 24 * time.Hour
)

// check rejects values out of bounds, naming the flag or variable as the
// user set it.
func (c *botCmd) check(o *origin) error {
	if err := o.inRange("top", c.Top, 1, maxTop); err != nil {
		return err
	}
	if err := o.inRange("workers", c.Workers, 1, maxWorkers); err != nil {
		return err
	}
	if !(c.Floor > 0 && c.Floor < 1) {
		return o.errorf("floor", "must be above 0 and below 1, got %v", c.Floor)
	}
	if err := o.durationIn("inbox-lease", c.InboxLease, minInboxLease, maxInboxLease); err != nil {
		return err
	}
	if err := o.durationIn("retention", c.Retention, minRetention, maxRetention); err != nil {
		return err
	}
	if g := c.AdminGroup; g != "" && (!strings.HasPrefix(g, "S") || strings.ContainsAny(g, " @")) {
		return o.errorf("admin-group", "must be a user group id such as S0123ABCD (Slack shows it in the group's profile, under ⋯ → Copy group ID), got %q", g)
	}
	if err := c.teamFlags.check(o); err != nil {
		return err
	}
	return o.durationIn("digest-grace", c.DigestGrace, 0, maxGrace)
}

// Run checks the configuration, then runs the bot until ctx ends.
// With --log-format json, an error that stops it is written as a JSON log
// line too, so that every line on stderr is JSON.
func (c *botCmd) Run(ctx context.Context, e env, o *origin) error {
	log, err := newLogger(e.stderr, c.LogLevel, c.LogFormat)
	if err != nil {
		return err
	}
	err = c.run(ctx, e, o, log)
	if err != nil && c.LogFormat == "json" {
		log.Error("incidentbot stopped", "err", err)
		return loggedError{err}
	}
	return err
}

func (c *botCmd) run(ctx context.Context, e env, o *origin, log *slog.Logger) error {
	if err := c.check(o); err != nil {
		return err
	}
	bi := readBuildInfo()
	log.Info("incidentbot starting", "version", bi.Version, "revision", bi.revision(), "go", bi.GoVersion)
	targets, err := c.digestFlags.parse()
	if err != nil {
		return err
	}
	appToken, botToken := e.getenv("SLACK_APP_TOKEN"), e.getenv("SLACK_BOT_TOKEN")
	if err := bot.CheckTokens(appToken, botToken); err != nil {
		return err
	}
	if err := c.checkAPI(e); err != nil {
		return err
	}
	lib, err := c.startLibrary(e, log)
	if err != nil {
		return err
	}
	defer func() { lib.current.Load().Close() }()

	st, where, err := c.storeFlags.open(ctx, e, log)
	if err != nil {
		return err
	}
	defer st.Close()
	log.Info("activity store open", "store", where)
	buffered := store.NewBuffered(st, log, store.BufferOptions{})
	owner := replicaName(e)

	// The team cases join before the bot answers: a replica that starts
	// answers with what the others already have.
	if err := lib.refreshTeam(ctx, st); err != nil {
		log.Warn("team cases not loaded; trying again in the background", "err", err)
	}

	dg := &digests{now: time.Now}
	b, err := c.newBot(e, log, lib, st, buffered, owner, dg)
	if err != nil {
		return err
	}
	lib.swapped = func(m *matcher.Matcher) { b.SetSearcher(m) }
	dg.s = digest.New(digest.Options{Targets: targets, Store: st, Poster: b, Owner: owner, Grace: time.Duration(c.DigestGrace),
		Logger: log, Library: func() *cases.Library { return lib.current.Load().Library() }})

	// The store's writer outlives the bot, so what the last events recorded
	// is written before the process exits.
	writerCtx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWriter()
	writerDone := make(chan error, 1)
	go func() { writerDone <- buffered.Run(writerCtx) }()

	// The probes listen before the bot connects, so that a slow start
	// shows as live but not ready.
	g, gctx := errgroup.WithContext(ctx)
	if err := serve(gctx, g, c.Listen, b.Handler(), log); err != nil {
		stopWriter()
		<-writerDone
		return err
	}
	if err := c.startAPI(gctx, g, e, lib, log); err != nil {
		stopWriter()
		<-writerDone
		return err
	}
	g.Go(func() error { return b.Run(gctx) })
	g.Go(func() error { return dg.s.Run(gctx) })
	g.Go(func() error { return purge(gctx, st, time.Duration(c.Retention), log) })
	g.Go(func() error { return purgeInbox(gctx, st, time.Now, log) })
	g.Go(func() error {
		followTeamCases(gctx, lib, st, time.Duration(c.TeamPoll))
		return nil
	})
	g.Go(func() error {
		for {
			select {
			case <-gctx.Done():
				return nil
			case <-e.reload:
				reload(gctx, c.libFlags, lib, b, log)
			}
		}
	})
	err = g.Wait()
	stopWriter()
	if werr := <-writerDone; err == nil {
		err = werr
	}
	log.Info("stopped", "unwritten_records", buffered.Dropped())
	return err
}

// liveLibrary is the matcher in use, swapped on reload and when the team
// cases change, with the reloads' metrics.
type liveLibrary struct {
	current atomic.Pointer[matcher.Matcher]
	opts    matcher.Options
	log     *slog.Logger
	// swapped, when set, is given each new matcher (the bot answers from
	// it). It is set before anything rebuilds the library.
	swapped func(*matcher.Matcher)

	mu    sync.Mutex   // held while the library is rebuilt
	files []*cases.Set // the built-in cases and case files in use
	team  teamCases    // the team cases in use

	reloadFailures prometheus.Counter // reloads refused: the previous library stayed
	lastLoaded     prometheus.Gauge   // when the library in use was loaded (Unix seconds)
}

func newLiveLibrary(opts matcher.Options, log *slog.Logger) *liveLibrary {
	return &liveLibrary{opts: opts, log: log,
		reloadFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "incidentbot_library_reload_failures_total",
			Help: "Reloads of the case library refused because a case file had an error or the index failed; the previous library stayed in use."}),
		lastLoaded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "incidentbot_library_last_reload_success_timestamp_seconds",
			Help: "When the case library in use was loaded, at start or by the last successful reload (Unix time)."}),
	}
}

// startLibrary loads the case library and builds (or reopens) its index.
func (c *botCmd) startLibrary(e env, log *slog.Logger) (*liveLibrary, error) {
	tax, err := c.taxonomy(e.stderr)
	if err != nil {
		return nil, err
	}
	return startLiveLibrary(&c.libFlags, matcher.Options{Floor: c.Floor, IndexDir: c.IndexDir, Logger: log, Taxonomy: tax}, e.stderr, log)
}

// startLiveLibrary loads the built-in cases and case files and indexes
// them; the team cases join when refreshTeam first finds them.
func startLiveLibrary(lf *libFlags, opts matcher.Options, warn io.Writer, log *slog.Logger) (*liveLibrary, error) {
	start := time.Now()
	sets, _, err := lf.loadSets(context.Background(), warn)
	if err != nil {
		return nil, err
	}
	if _, err := mergeSets(sets, warn); err != nil {
		return nil, err
	}
	l := newLiveLibrary(opts, log)
	m, lib, _, err := l.build(sets, teamCases{})
	if err != nil {
		return nil, err
	}
	l.files = sets
	l.current.Store(m)
	l.lastLoaded.SetToCurrentTime()
	log.Info("case library ready", "cases", lib.Len(), "index_reused", m.Reused(), "took", time.Since(start).Round(time.Millisecond))
	return l, nil
}

// build indexes the files' cases and the team cases together, the private
// team cases kept to their channels. It returns why team cases were left
// out.
func (l *liveLibrary) build(files []*cases.Set, tc teamCases) (*matcher.Matcher, *cases.Library, []string, error) {
	lib, only, left := withTeam(files, tc)
	opts := l.opts
	opts.Only = only
	m, err := newMatcher(lib, opts)
	return m, lib, left, err
}

// swap puts m in use; lookups being answered finish with the old matcher,
// closed a little later.
func (l *liveLibrary) swap(m *matcher.Matcher) {
	old := l.current.Swap(m)
	if l.swapped != nil {
		l.swapped(m)
	}
	l.lastLoaded.SetToCurrentTime()
	if old != nil {
		time.AfterFunc(time.Minute, func() { old.Close() })
	}
}

// refreshTeam rebuilds the index with the team cases when they changed
// since it was built, and swaps it in before it returns. What fails leaves
// the library in use, and is tried again at the next call.
func (l *liveLibrary) refreshTeam(ctx context.Context, st teamStore) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, err := st.TeamCasesVersion(ctx)
	if err != nil {
		return err
	}
	if v == l.team.version {
		return nil
	}
	start := time.Now()
	tc, err := readTeamCases(ctx, st, l.opts.Taxonomy)
	if err != nil {
		return err
	}
	m, lib, left, err := l.build(l.files, tc)
	if err != nil {
		l.reloadFailures.Inc()
		return fmt.Errorf("index the team cases: %w", err)
	}
	for _, why := range left {
		l.log.Warn(why)
	}
	l.team = tc
	l.swap(m)
	l.log.Info("team cases loaded", "version", tc.version, "team_cases", len(tc.set.Cases), "private", len(tc.only),
		"cases", lib.Len(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// newBot wires the bot to the library, the store and the digests.
func (c *botCmd) newBot(e env, log *slog.Logger, lib *liveLibrary, st store.Store, buffered *store.Buffered, owner string, dg *digests) (*bot.Bot, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(lib.reloadFailures, lib.lastLoaded, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), readBuildInfo().collector(),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "incidentbot_activity_writes_dropped_total",
			Help: "Suggestions and votes given up: the write buffer was full, they waited too long, or the store rejected them."},
			func() float64 { return float64(buffered.Dropped()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "incidentbot_activity_writes_pending",
			Help: "Suggestions and votes waiting in the write buffer."},
			func() float64 { return float64(buffered.Pending()) }))
	m := lib.current.Load()
	lease := time.Duration(c.InboxLease)
	return bot.New(m, bot.Options{
		AppToken:        e.getenv("SLACK_APP_TOKEN"),
		BotToken:        e.getenv("SLACK_BOT_TOKEN"),
		APIURL:          e.getenv("SLACK_API_URL"),
		ChannelPatterns: splitList(c.Channels),
		ChannelIDs:      splitList(c.ChannelIDs),
		Top:             c.Top,
		DefaultLang:     cases.Lang(c.Lang),
		Workers:         c.Workers,
		Logger:          log,
		Registry:        reg,
		Taxonomy:        m.Taxonomy(),
		Recorder:        buffered,
		State:           sharedState{s: st, owner: owner},
		Votes:           st,
		VoteWindow:      time.Duration(c.Retention),
		Inbox:           inbox{s: st, owner: owner, lease: lease},
		OrphanEvery:     max(lease/3, time.Second),
		ClaimTTL:        min(30*time.Second, lease/2),
		Digests:         dg,
		PublicURL:       c.PublicURL,
		TeamCases:       st,
		AdminGroup:      c.AdminGroup,
		RefreshLibrary:  func(ctx context.Context) error { return lib.refreshTeam(ctx, st) },
		Checks: map[string]func(context.Context) error{"store": func(ctx context.Context) error {
			if err := st.Ping(ctx); err != nil {
				return err
			}
			if !buffered.Healthy() {
				return fmt.Errorf("writes are failing; %d waiting", buffered.Pending())
			}
			return nil
		}},
	})
}

// serve serves /healthz and /metrics on addr in g until ctx ends; an empty
// addr serves nothing.
func serve(ctx context.Context, g *errgroup.Group, addr string, h http.Handler, log *slog.Logger) error {
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s for /healthz and /metrics: %w (set --listen or INCIDENTBOT_LISTEN)", addr, err)
	}
	log.Info("serving /healthz and /metrics", "addr", ln.Addr().String())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	serveUntilDone(ctx, g, srv, ln)
	return nil
}

// serveUntilDone serves srv on ln in g, and shuts it down (giving requests
// in flight 5 s) when ctx ends.
func serveUntilDone(ctx context.Context, g *errgroup.Group, srv *http.Server, ln net.Listener) {
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
}

// reload builds a new index from the case files beside the one in use and
// swaps it in; events being handled finish with the old one, which is
// closed a little later. The new library is all or nothing: if any case
// file has an error (a case or a whole file would be left out) or the index
// cannot be built, the previous library stays in use entirely, and the
// failure is logged as an error, counted, and shown on the health probes
// until a reload succeeds.
func reload(ctx context.Context, lf libFlags, lib *liveLibrary, b *bot.Bot, log *slog.Logger) {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	start := time.Now()
	fail := func(err error) {
		lib.reloadFailures.Inc()
		b.SetLibraryStatus(err)
		log.Error("reload failed; keeping the previous case library", "cases", lib.current.Load().Library().Len(), "err", err)
	}
	var warn strings.Builder
	sets, problems, err := lf.loadSets(ctx, &warn)
	if err != nil {
		fail(err)
		return
	}
	if len(problems) > 0 {
		first := make([]string, 0, 3)
		for _, p := range problems[:min(len(problems), 3)] {
			first = append(first, p.String())
		}
		more := ""
		if len(problems) > len(first) {
			more = fmt.Sprintf("; and %d more", len(problems)-len(first))
		}
		fail(fmt.Errorf("%s in the case files: %s%s; fix them (incidentbot cases validate) and reload again",
			plural(len(problems), "problem"), strings.Join(first, "; "), more))
		return
	}
	if _, err := mergeSets(sets, &warn); err != nil {
		fail(err)
		return
	}
	if warn.Len() > 0 {
		log.Warn("reload: " + strings.TrimSpace(warn.String()))
	}
	m, next, left, err := lib.build(sets, lib.team)
	if err != nil {
		fail(err)
		return
	}
	for _, why := range left {
		log.Warn(why)
	}
	lib.files = sets
	lib.swap(m)
	b.SetLibraryStatus(nil)
	log.Info("case library reloaded", "cases", next.Len(), "took", time.Since(start).Round(time.Millisecond))
}

// inboxKeep is how long events stay in the inbox, handled or not: Slack
// redelivers within minutes, and an event not handled after an hour is no
// longer worth answering. Handled events keep only their key.
const inboxKeep = time.Hour

// inboxPurger is the part of the store purgeInbox uses.
type inboxPurger interface {
	InboxPurge(ctx context.Context, before time.Time) (int64, error)
}

// purgeInbox deletes inbox events older than inboxKeep, at start and then
// every inboxKeep/6, until ctx ends.
func purgeInbox(ctx context.Context, st inboxPurger, now func() time.Time, log *slog.Logger) error {
	t := time.NewTicker(inboxKeep / 6)
	defer t.Stop()
	for {
		n, err := st.InboxPurge(ctx, now().Add(-inboxKeep))
		if err != nil && ctx.Err() == nil {
			log.Warn("purging old inbox events failed", "err", err)
		} else if n > 0 {
			log.Debug("purged old inbox events", "events", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// purge deletes activity older than the retention age, at start and then
// daily, until ctx ends.
func purge(ctx context.Context, st store.Store, age time.Duration, log *slog.Logger) error {
	t := time.NewTicker(24 * time.Hour)
	defer t.Stop()
	for {
		n, err := st.Purge(ctx, time.Now().Add(-age))
		if err != nil && ctx.Err() == nil {
			log.Warn("purging old activity failed", "err", err)
		} else if n > 0 {
			log.Info("purged old activity", "rows", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usagef("--log-level must be debug, info, warn or error, got %q", level)
	}
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: readableDurations}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usagef("--log-format must be text or json, got %q", format)
}

// readableDurations writes durations as "1.5s" rather than nanoseconds
// (JSON) so that every log format reads the same.
func readableDurations(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}
