package main

import (
	"context"
	"io"

	"github.com/incidentbot/incidentbot/api"
	"github.com/incidentbot/incidentbot/matcher"
)

// mcpCmd is "incidentbot mcp": the MCP server over standard input and
// output, for an assistant that starts it as a command.
type mcpCmd struct {
	libFlags
	apiFlags
	storeFlags
	teamFlags
	IndexDir string `name:"index-dir" env:"INCIDENTBOT_INDEX_DIR" help:"Keep the search index on disk here, reused while the library is unchanged; empty: in memory (a library of more than 2,000 cases is built in $TMPDIR, removed once open)."`
	LogLevel string `name:"log-level" default:"warn" enum:"debug,info,warn,error" env:"INCIDENTBOT_MCP_LOG_LEVEL" help:"What to log on standard error: debug, info, warn or error."`
}

// Run serves one client until it disconnects or ctx ends. Standard output
// carries only the protocol; logs go to standard error.
func (c *mcpCmd) Run(ctx context.Context, e env, o *origin) error {
	if err := c.teamFlags.check(o); err != nil {
		return err
	}
	log, err := newLogger(e.stderr, c.LogLevel, "text")
	if err != nil {
		return err
	}
	lib, err := startLive(&c.libFlags, matcher.Options{IndexDir: c.IndexDir, Logger: log}, e.stderr, log)
	if err != nil {
		return err
	}
	defer lib.close()
	stopTeam, err := followTeam(ctx, lib, &c.storeFlags, c.teamFlags, e, log)
	if err != nil {
		return err
	}
	defer stopTeam()
	srv, err := api.New(api.Options{Matcher: lib.current.Load, PublicURL: c.PublicURL, Logger: log, Version: buildVersion()})
	if err != nil {
		return usageError{"--public-url: " + err.Error()}
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-e.reload:
				lib.reloadFiles(c.libFlags, log)
			}
		}
	}()
	return srv.ServeStdio(ctx, io.NopCloser(e.stdin), nopWriteCloser{e.stdout})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
