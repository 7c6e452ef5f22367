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
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/incidentbot/incidentbot/api"
	"github.com/incidentbot/incidentbot/cases"
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
	Addr      string `name:"addr" default:"127.0.0.1:8088" env:"INCIDENTBOT_API_ADDR" help:"Address to listen on. Beyond loopback (e.g. :8088) the token in INCIDENTBOT_API_TOKEN is required."`
	IndexDir  string `name:"index-dir" env:"INCIDENTBOT_INDEX_DIR" help:"Keep the search index on disk here, reused while the library is unchanged; empty: in memory."`
	LogLevel  string `name:"log-level" default:"info" enum:"debug,info,warn,error" env:"INCIDENTBOT_LOG_LEVEL" help:"debug, info, warn or error."`
	LogFormat string `name:"log-format" default:"text" enum:"text,json" env:"INCIDENTBOT_LOG_FORMAT" help:"text or json."`
}

// Run serves until ctx ends; SIGHUP reloads the library.
func (c *serveCmd) Run(ctx context.Context, e env) error {
	token := e.getenv(api.TokenEnv)
	auth, err := api.CheckListen(c.Addr, token)
	if err != nil {
		return usageError{err.Error()}
	}
	log, err := newLogger(e.stderr, c.LogLevel, c.LogFormat)
	if err != nil {
		return err
	}
	lib, err := startLive(c.libFlags, matcher.Options{IndexDir: c.IndexDir}, e.stderr, log)
	if err != nil {
		return err
	}
	defer lib.close()
	srv, err := api.New(api.Options{Matcher: lib.current.Load, Token: token, PublicURL: c.PublicURL, Logger: log, Version: buildVersion()})
	if err != nil {
		return usageError{fmt.Sprintf("--public-url: %v", err)}
	}
	g, gctx := errgroup.WithContext(ctx)
	if err := serveAPI(gctx, g, c.Addr, srv.Handler(), auth, log); err != nil {
		return err
	}
	g.Go(func() error {
		for {
			select {
			case <-gctx.Done():
				return nil
			case <-e.reload:
				lib.reload(c.libFlags, log)
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

// live is a matcher over the library, swapped when the library reloads.
type live struct {
	current atomic.Pointer[matcher.Matcher]
	opts    matcher.Options
}

// startLive loads the library and indexes it.
func startLive(lf libFlags, opts matcher.Options, warn io.Writer, log *slog.Logger) (*live, error) {
	start := time.Now()
	tax, err := lf.taxonomy(warn)
	if err != nil {
		return nil, err
	}
	if opts.Taxonomy == nil {
		opts.Taxonomy = tax
	}
	lib, err := loadLibrary(&lf, warn)
	if err != nil {
		return nil, err
	}
	m, err := matcher.New(lib, opts)
	if err != nil {
		return nil, err
	}
	l := &live{opts: opts}
	l.current.Store(m)
	log.Info("case library ready", "cases", lib.Len(), "index_reused", m.Reused(), "took", time.Since(start).Round(time.Millisecond).String())
	return l, nil
}

// reload swaps in a new index of the library; requests being answered
// finish with the old one, closed a little later. A library that fails to
// load leaves the old one in place.
func (l *live) reload(lf libFlags, log *slog.Logger) {
	var warn strings.Builder
	lib, err := loadLibrary(&lf, &warn)
	if err != nil {
		log.Error("reload failed; keeping the current case library", "err", err)
		return
	}
	if warn.Len() > 0 {
		log.Warn("reload: " + strings.TrimSpace(warn.String()))
	}
	opts := l.opts
	opts.Taxonomy = lf.tax()
	m, err := matcher.New(lib, opts)
	if err != nil {
		log.Error("reload failed; keeping the current case library", "err", err)
		return
	}
	old := l.current.Swap(m)
	time.AfterFunc(time.Minute, func() { old.Close() })
	log.Info("case library reloaded", "cases", lib.Len())
}

func (l *live) close() { l.current.Load().Close() }

// caseSource gives cases from beyond the case files: a team's captured
// cases in the activity store. None is wired yet; see loadLibrary.
type caseSource interface {
	// TeamCases returns the cases the team shared, never those private to
	// a channel.
	TeamCases(ctx context.Context) (*cases.Set, error)
}

// loadLibrary is the library the API and MCP serve: the same files and
// built-in cases run answers from. Team cases captured in the store join
// here through a caseSource once the store keeps them.
func loadLibrary(lf *libFlags, warn io.Writer) (*cases.Library, error) {
	return lf.load(warn)
}

// buildVersion is the module version of this build, for MCP clients.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
