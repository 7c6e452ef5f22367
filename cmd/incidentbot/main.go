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
	"os"
	"os/signal"
	"syscall"
)

const usage = `incidentbot: find past incidents like the one you are in.

Usage:
  incidentbot match [--cases PATH]... [--builtin=true|false] [--top N] [--json] [--batch] [TEXT...]
  incidentbot show ID [--lang en|ko] [--cases PATH]... [--builtin=true|false]
  incidentbot cases validate [PATH...]
  incidentbot cases list [--json] [--cases PATH]... [--builtin=true|false]
  incidentbot cases stats [--cases PATH]... [--builtin=true|false]
  incidentbot cases relate DIR
  incidentbot run [flags]            run the Slack bot (see incidentbot run --help)
  incidentbot digest preview [--channel C] [--week 2026-W48] [--lang en|ko] [--json]
  incidentbot digest next [--digest TARGET]...
  incidentbot help

Run "incidentbot COMMAND --help" for a command's flags.
`

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
	err := dispatch(ctx, args, e)
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(e.stderr, "incidentbot: %s\n", ue.msg)
		return exitUsage
	default:
		fmt.Fprintf(e.stderr, "incidentbot: %v\n", err)
		return exitError
	}
}

// errHelp is returned after help was printed on request.
var errHelp = errors.New("help requested")

func dispatch(ctx context.Context, args []string, e env) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return usagef("no command given")
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "match":
		return cmdMatch(ctx, rest, e)
	case "show":
		return cmdShow(rest, e)
	case "cases":
		return cmdCases(rest, e)
	case "run":
		return cmdRun(ctx, rest, e)
	case "digest":
		return cmdDigest(ctx, rest, e)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(e.stdout, usage)
		return errHelp
	default:
		fmt.Fprint(e.stderr, usage)
		return usagef("unknown command %q", cmd)
	}
}
