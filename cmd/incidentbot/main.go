// Command incidentbot answers "have we, or anyone, seen this before, and
// what fixed it?" for on-call engineers: on the command line (match, show,
// cases) and in Slack (run).
//
// This package is the only place that wires incidentbot's packages together.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	_ "time/tzdata" // digest schedules name time zones (CRON_TZ); minimal images have no zoneinfo
)

// exit codes
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError is a mistake in how the command was called; it exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// loggedError is a fatal error already written to the log (in the log's
// format); main only turns it into the exit code.
type loggedError struct{ err error }

func (e loggedError) Error() string { return e.err.Error() }
func (e loggedError) Unwrap() error { return e.err }

// env gives the environment; tests pass their own.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	reload         <-chan os.Signal // SIGHUP: reload the case library (run)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, reload: hup})
	stop()
	os.Exit(code)
}

// run runs one command and returns the process's exit code.
func run(ctx context.Context, args []string, e env) int {
	err := execute(ctx, args, e)
	var ue usageError
	var le loggedError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &le):
		// Already written through the command's logger.
		if errors.As(le.err, &ue) {
			return exitUsage
		}
		return exitError
	case errors.As(err, &ue):
		report(e, args, ue.msg)
		return exitUsage
	default:
		report(e, args, err.Error())
		return exitError
	}
}

// report writes the error that ends the command: as a JSON log record when
// "run" was asked for JSON logs (even if the command line itself was
// wrong, so that a log collector never sees a stray text line), else as
// one line of text.
func report(e env, args []string, msg string) {
	if len(args) > 0 && args[0] == "run" && jsonLogsRequested(args[1:], e) {
		slog.New(slog.NewJSONHandler(e.stderr, nil)).Error("incidentbot stopped", "err", msg)
		return
	}
	fmt.Fprintf(e.stderr, "incidentbot: %s\n", msg)
}

// jsonLogsRequested reads --log-format from args, else INCIDENTBOT_LOG_FORMAT,
// without the rest of the command line having to be valid.
func jsonLogsRequested(args []string, e env) bool {
	format := e.getenv("INCIDENTBOT_LOG_FORMAT")
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--log-format="); ok {
			format = v
		} else if a == "--log-format" && i+1 < len(args) {
			format = args[i+1]
		}
	}
	return format == "json"
}

// errHelp is returned after help was printed on request.
var errHelp = errors.New("help requested")
