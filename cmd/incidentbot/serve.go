package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/incidentbot/incidentbot/api"
	"github.com/incidentbot/incidentbot/matcher"
)

// apiFlags configure the HTTP API wherever it is served: serve, and run
// with --api-addr.
type apiFlags struct {
	PublicURL string `name:"public-url" env:"INCIDENTBOT_PUBLIC_URL" placeholder:"URL" help:"Where people reach the library page, e.g. https://incidents.example.com; bot replies and API answers link to cases there."`
}

// serveCmd is "incidentbot serve": the HTTP API, the MCP endpoint and the
// library page.
type serveCmd struct {
	libFlags
	apiFlags
	storeFlags
	teamFlags
	Addr      string `name:"addr" default:"127.0.0.1:8088" env:"INCIDENTBOT_API_ADDR" help:"Address to listen on. Beyond loopback (e.g. :8088) the token in INCIDENTBOT_API_TOKEN is required."`
	IndexDir  string `name:"index-dir" env:"INCIDENTBOT_INDEX_DIR" help:"Keep the search index on disk here, reused while the library is unchanged; empty: in memory (a library of more than 2,000 cases is built in $TMPDIR, removed once open)."`
	LogLevel  string `name:"log-level" default:"info" enum:"debug,info,warn,error" env:"INCIDENTBOT_LOG_LEVEL" help:"debug, info, warn or error."`
	LogFormat string `name:"log-format" default:"text" enum:"text,json" env:"INCIDENTBOT_LOG_FORMAT" help:"text or json."`
}

// Run serves until ctx ends; SIGHUP reloads the library, and the team
// cases in the activity store are followed as they change.
func (c *serveCmd) Run(ctx context.Context, e env, o *origin) error {
	if err := c.teamFlags.check(o); err != nil {
		return err
	}
	token := e.getenv(api.TokenEnv)
	auth, err := api.CheckListen(c.Addr, token)
	if err != nil {
		return usageError{err.Error()}
	}
	log, err := newLogger(e.stderr, c.LogLevel, c.LogFormat)
	if err != nil {
		return err
	}
	lib, err := startLive(&c.libFlags, matcher.Options{IndexDir: c.IndexDir, Logger: log}, e.stderr, log)
	if err != nil {
		return err
	}
	defer lib.close()
	srv, err := api.New(api.Options{Matcher: lib.current.Load, Token: token, PublicURL: c.PublicURL, Logger: log, Version: buildVersion()})
	if err != nil {
		return usageError{fmt.Sprintf("--public-url: %v", err)}
	}
	g, gctx := errgroup.WithContext(ctx)
	stopTeam, err := followTeam(gctx, lib, &c.storeFlags, c.teamFlags, e, log)
	if err != nil {
		return err
	}
	defer stopTeam()
	if err := serveAPI(gctx, g, c.Addr, srv.Handler(), auth, log); err != nil {
		return err
	}
	g.Go(func() error {
		for {
			select {
			case <-gctx.Done():
				return nil
			case <-e.reload:
				lib.reloadFiles(c.libFlags, log)
			}
		}
	})
	return g.Wait()
}

// checkAPI applies the token rule to --api-addr before anything starts.
func (c *botCmd) checkAPI(e env) error {
	if c.APIAddr == "" {
		return nil
	}
	if _, err := api.CheckListen(c.APIAddr, e.getenv(api.TokenEnv)); err != nil {
		return usageError{"--api-addr: " + err.Error()}
	}
	return nil
}

// startAPI serves the API beside the bot when --api-addr is set, from the
// same library the bot answers from (swapped with it on reload).
func (c *botCmd) startAPI(ctx context.Context, g *errgroup.Group, e env, lib *liveLibrary, log *slog.Logger) error {
	if c.APIAddr == "" {
		return nil
	}
	token := e.getenv(api.TokenEnv)
	auth, err := api.CheckListen(c.APIAddr, token)
	if err != nil {
		return usageError{"--api-addr: " + err.Error()}
	}
	srv, err := api.New(api.Options{Matcher: lib.current.Load, Token: token, PublicURL: c.PublicURL, Logger: log, Version: buildVersion()})
	if err != nil {
		return usageError{"--public-url: " + err.Error()}
	}
	return serveAPI(ctx, g, c.APIAddr, srv.Handler(), auth, log)
}

// serveAPI serves the API's handler on addr in g until ctx ends, and says
// at start where and how requests are protected.
func serveAPI(ctx context.Context, g *errgroup.Group, addr string, h http.Handler, auth string, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s for the API: %w (set --addr, --api-addr or INCIDENTBOT_API_ADDR)", addr, err)
	}
	base := "http://" + ln.Addr().String()
	log.Info("serving the API, MCP and the library page", "addr", ln.Addr().String(), "page", base+"/", "mcp", base+"/mcp", "auth", auth)
	// No ReadTimeout: /mcp streams events on long-lived GETs; bodies are
	// bounded by the handler.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	serveUntilDone(ctx, g, srv, ln)
	return nil
}

// startLive loads the library and indexes it, for serve and mcp.
func startLive(lf *libFlags, opts matcher.Options, warn io.Writer, log *slog.Logger) (*liveLibrary, error) {
	tax, err := lf.taxonomy(warn)
	if err != nil {
		return nil, err
	}
	if opts.Taxonomy == nil {
		opts.Taxonomy = tax
	}
	return startLiveLibrary(lf, opts, warn, log)
}

// reloadFiles reads the case files again and swaps in a new index of them
// with the team cases in use. Unlike run's reload, a case file with
// errors only leaves its bad cases out; a library that fails to load
// leaves the old one in place.
func (l *liveLibrary) reloadFiles(lf libFlags, log *slog.Logger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var warn strings.Builder
	sets, _, err := lf.loadSets(context.Background(), &warn)
	if err == nil {
		_, err = mergeSets(sets, &warn)
	}
	if err != nil {
		log.Error("reload failed; keeping the current case library", "err", err)
		return
	}
	if warn.Len() > 0 {
		log.Warn("reload: " + strings.TrimSpace(warn.String()))
	}
	l.opts.Taxonomy = lf.tax()
	m, lib, left, err := l.build(sets, l.team)
	if err != nil {
		log.Error("reload failed; keeping the current case library", "err", err)
		return
	}
	for _, why := range left {
		log.Warn(why)
	}
	l.files = sets
	l.swap(m)
	log.Info("case library reloaded", "cases", lib.Len())
}

func (l *liveLibrary) close() { l.current.Load().Close() }

// followTeam adds the team cases in the activity store to the library,
// and follows them until ctx ends: the API and MCP serve what the bot
// suggests. A command that only reads the store does not create one: with
// no SQLite file there, it serves the library without team cases. It
// returns a function that stops following and closes the store.
func followTeam(ctx context.Context, lib *liveLibrary, sf *storeFlags, tf teamFlags, e env, log *slog.Logger) (func(), error) {
	st, where, ok, err := openExisting(ctx, sf, e, log)
	if err != nil {
		return nil, err
	}
	if !ok {
		log.Info("no activity store: serving no team cases", "path", where)
		return func() {}, nil
	}
	log.Info("reading team cases from the activity store", "store", where)
	if err := lib.refreshTeam(ctx, st); err != nil {
		log.Warn("team cases not loaded; trying again in the background", "err", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		followTeamCases(ctx, lib, st, time.Duration(tf.TeamPoll))
	}()
	return func() {
		cancel()
		<-done
		st.Close()
	}, nil
}

// buildVersion is the module version of this build, for MCP clients.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
