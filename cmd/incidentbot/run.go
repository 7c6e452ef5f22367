package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
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

// runConfig is the configuration of the Slack bot, from flags with
// environment fallbacks.
type runConfig struct {
	lib        libFlags
	channels   string
	channelIDs string
	floor      float64
	top        int
	lang       string
	listen     string
	indexDir   string
	workers    int
	logLevel   string
	logFormat  string
	store      storeFlags
	digests    digestFlags
	retention  string
	inboxLease time.Duration
}

// envOr returns the environment variable's value, or def.
func envOr(e env, name, def string) string {
	if v := e.getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(e env, name string, def int) int {
	if v, err := strconv.Atoi(e.getenv(name)); err == nil {
		return v
	}
	return def
}

func envDuration(e env, name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(e.getenv(name)); err == nil {
		return v
	}
	return def
}

func envFloat(e env, name string, def float64) float64 {
	if v, err := strconv.ParseFloat(e.getenv(name), 64); err == nil {
		return v
	}
	return def
}

func cmdRun(ctx context.Context, args []string, e env) error {
	fs := newFlagSet("run", "run [flags]\n\nEnvironment: SLACK_APP_TOKEN (xapp-…), SLACK_BOT_TOKEN (xoxb-…), SLACK_API_URL (optional)", e)
	var c runConfig
	c.lib.register(fs, e)
	fs.StringVar(&c.channels, "channels", envOr(e, "INCIDENTBOT_CHANNELS", "inc-*,incident-*"), "incident channel name patterns, comma-separated (env INCIDENTBOT_CHANNELS)")
	fs.StringVar(&c.channelIDs, "channel-ids", envOr(e, "INCIDENTBOT_CHANNEL_IDS", ""), "incident channel ids, comma-separated, beside the patterns (env INCIDENTBOT_CHANNEL_IDS)")
	fs.Float64Var(&c.floor, "floor", envFloat(e, "INCIDENTBOT_FLOOR", matcher.DefaultFloor), "confidence floor from 0 to 1: cases scoring lower are not suggested (env INCIDENTBOT_FLOOR)")
	fs.IntVar(&c.top, "top", envInt(e, "INCIDENTBOT_TOP", 3), "cases per reply, 1 to 10 (env INCIDENTBOT_TOP)")
	fs.StringVar(&c.lang, "lang", envOr(e, "INCIDENTBOT_LANG", "en"), "reply language when the text does not tell: en or ko (env INCIDENTBOT_LANG)")
	fs.StringVar(&c.listen, "listen", envOr(e, "INCIDENTBOT_LISTEN", "127.0.0.1:8080"), "address of /livez, /readyz, /healthz and /metrics (no authentication: loopback by default; :8080 in a container); empty turns them off (env INCIDENTBOT_LISTEN)")
	fs.StringVar(&c.indexDir, "index-dir", envOr(e, "INCIDENTBOT_INDEX_DIR", ""), "keep the search index on disk here, reused while the library is unchanged; empty: in memory (env INCIDENTBOT_INDEX_DIR)")
	fs.IntVar(&c.workers, "workers", envInt(e, "INCIDENTBOT_WORKERS", 4), "events handled at once (env INCIDENTBOT_WORKERS)")
	fs.StringVar(&c.logLevel, "log-level", envOr(e, "INCIDENTBOT_LOG_LEVEL", "info"), "debug, info, warn or error (env INCIDENTBOT_LOG_LEVEL)")
	fs.StringVar(&c.logFormat, "log-format", envOr(e, "INCIDENTBOT_LOG_FORMAT", "text"), "text or json (env INCIDENTBOT_LOG_FORMAT)")
	c.store.register(fs, e)
	c.digests.register(fs, e)
	fs.DurationVar(&c.inboxLease, "inbox-lease", envDuration(e, "INCIDENTBOT_INBOX_LEASE", 60*time.Second), "how long the events of a replica that stopped wait before another replica takes them over; a living replica renews its own (env INCIDENTBOT_INBOX_LEASE)")
	fs.StringVar(&c.retention, "retention", envOr(e, "INCIDENTBOT_RETENTION", "180d"), "delete activity older than this, e.g. 180d or 720h (env INCIDENTBOT_RETENTION)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) > 0 {
		return usagef("run takes no arguments, got %q", pos[0])
	}
	if c.top < 1 || c.top > 10 {
		return usagef("--top must be between 1 and 10, got %d", c.top)
	}
	if c.floor <= 0 || c.floor >= 1 {
		return usagef("--floor must be between 0 and 1, got %v", c.floor)
	}
	if c.inboxLease < 2*time.Second {
		return usagef("--inbox-lease must be at least 2s, got %v", c.inboxLease)
	}
	if c.lang != "en" && c.lang != "ko" {
		return usagef("--lang must be en or ko, got %q", c.lang)
	}
	log, err := newLogger(e.stderr, c.logLevel, c.logFormat)
	if err != nil {
		return err
	}
	retention, err := parseAge(c.retention)
	if err != nil {
		return usagef("--retention: %v", err)
	}
	targets, err := c.digests.parse()
	if err != nil {
		return err
	}
	appToken, botToken := e.getenv("SLACK_APP_TOKEN"), e.getenv("SLACK_BOT_TOKEN")
	if err := bot.CheckTokens(appToken, botToken); err != nil {
		return err
	}

	start := time.Now()
	lib, err := c.lib.load(e, e.stderr)
	if err != nil {
		return err
	}
	mopts := matcher.Options{Floor: c.floor, IndexDir: c.indexDir}
	m, err := matcher.New(lib, mopts)
	if err != nil {
		return err
	}
	var current atomic.Pointer[matcher.Matcher]
	current.Store(m)
	defer func() { current.Load().Close() }()
	log.Info("case library ready", "cases", lib.Len(), "index_reused", m.Reused(), "took", time.Since(start).Round(time.Millisecond))

	st, where, err := c.store.open(ctx, e)
	if err != nil {
		return err
	}
	defer st.Close()
	log.Info("activity store open", "store", where)
	buffered := store.NewBuffered(st, log, store.BufferOptions{})
	owner := replicaName(e)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "incidentbot_activity_writes_dropped_total",
			Help: "Suggestions and votes given up: the write buffer was full, they waited too long, or the store rejected them."},
			func() float64 { return float64(buffered.Dropped()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "incidentbot_activity_writes_pending",
			Help: "Suggestions and votes waiting in the write buffer."},
			func() float64 { return float64(buffered.Pending()) }))
	dg := &digests{now: time.Now}
	b, err := bot.New(m, bot.Options{
		AppToken:        appToken,
		BotToken:        botToken,
		APIURL:          e.getenv("SLACK_API_URL"),
		ChannelPatterns: splitList(c.channels),
		ChannelIDs:      splitList(c.channelIDs),
		Top:             c.top,
		DefaultLang:     cases.Lang(c.lang),
		Workers:         c.workers,
		Logger:          log,
		Registry:        reg,
		Taxonomy:        m.Taxonomy(),
		Recorder:        recorder{buffered},
		State:           sharedState{s: st, owner: owner},
		Inbox:           inbox{s: st, owner: owner, lease: c.inboxLease},
		OrphanEvery:     max(c.inboxLease/3, time.Second),
		ClaimTTL:        min(30*time.Second, c.inboxLease/2),
		Digests:         dg,
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
	if err != nil {
		return err
	}
	dg.s = digest.New(digest.Options{Targets: targets, Store: st, Poster: b, Owner: owner, Grace: c.digests.grace,
		Logger: log, Library: func() *cases.Library { return current.Load().Library() }})

	// The store's writer outlives the bot, so what the last events recorded
	// is written before the process exits.
	writerCtx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWriter()
	writerDone := make(chan error, 1)
	go func() { writerDone <- buffered.Run(writerCtx) }()

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return b.Run(gctx) })
	g.Go(func() error { return dg.s.Run(gctx) })
	g.Go(func() error { return purge(gctx, st, retention, log) })
	g.Go(func() error {
		for {
			select {
			case <-gctx.Done():
				return nil
			case <-e.reload:
				reload(c.lib, e, mopts, &current, b, log)
			}
		}
	})
	if c.listen != "" {
		ln, err := net.Listen("tcp", c.listen)
		if err != nil {
			return fmt.Errorf("listen on %s for /healthz and /metrics: %w (set --listen or INCIDENTBOT_LISTEN)", c.listen, err)
		}
		log.Info("serving /healthz and /metrics", "addr", ln.Addr().String())
		srv := &http.Server{Handler: b.Handler(), ReadHeaderTimeout: 5 * time.Second}
		g.Go(func() error {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		g.Go(func() error {
			<-gctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(sctx)
		})
	}
	err = g.Wait()
	stopWriter()
	if werr := <-writerDone; err == nil {
		err = werr
	}
	log.Info("stopped", "unwritten_records", buffered.Dropped())
	return err
}

// reload builds a new index from the case files beside the one in use and
// swaps it in; events being handled finish with the old one, which is
// closed a little later. A library that fails to load leaves the old one in
// place.
func reload(lf libFlags, e env, opts matcher.Options, current *atomic.Pointer[matcher.Matcher], b *bot.Bot, log *slog.Logger) {
	start := time.Now()
	var warn strings.Builder
	lib, err := lf.load(e, &warn)
	if err != nil {
		log.Error("reload failed; keeping the current case library", "err", err)
		return
	}
	if warn.Len() > 0 {
		log.Warn("reload: " + strings.TrimSpace(warn.String()))
	}
	m, err := matcher.New(lib, opts)
	if err != nil {
		log.Error("reload failed; keeping the current case library", "err", err)
		return
	}
	old := current.Swap(m)
	b.SetSearcher(m)
	time.AfterFunc(time.Minute, func() { old.Close() })
	log.Info("case library reloaded", "cases", lib.Len(), "took", time.Since(start).Round(time.Millisecond))
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
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usagef("--log-format must be text or json, got %q", format)
}
