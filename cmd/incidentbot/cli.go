package main

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/incidentbot/incidentbot/matcher"
)

// cli is the command line: one field per command. Each command is a struct
// whose fields are its flags and arguments (kong tags) and whose
// Run(ctx context.Context, e env, o *origin) error method runs it. A flag
// with an env tag falls back to that environment variable; a bad value there
// is rejected exactly like a bad flag, naming the variable.
type cli struct {
	Match   matchCmd   `cmd:"" help:"Find the past incidents most like TEXT (or standard input)."`
	Show    showCmd    `cmd:"" help:"Print one case in full."`
	Cases   casesCmd   `cmd:"" help:"Import, validate, list, count and relate case files."`
	Run     botCmd     `cmd:"" help:"Run the Slack bot."`
	Digest  digestCmd  `cmd:"" help:"Preview weekly digests and when they are due."`
	Serve   serveCmd   `cmd:"" help:"Serve the HTTP API, the MCP endpoint (/mcp) and the library page."`
	MCP     mcpCmd     `cmd:"" name:"mcp" help:"Serve MCP over standard input and output, for an assistant that runs incidentbot as a command."`
	Version versionCmd `cmd:"" help:"Print the version, commit and Go version of this build."`
}

const description = "incidentbot: find past incidents like the one you are in."

// parse reads args into a fresh cli and returns the chosen command's
// context. Help requested with --help or "help" is printed on stdout and
// comes back as errHelp; every mistake comes back as a usageError.
func parse(args []string, e env) (kctx *kong.Context, o *origin, err error) {
	if len(args) > 0 && args[0] == "help" {
		args = append(append([]string{}, args[1:]...), "--help")
	}
	o = &origin{fromEnv: map[string]string{}}
	var c cli
	exited := false
	k, err := kong.New(&c, append(kongOptions(),
		kong.Writers(e.stdout, e.stderr),
		kong.Exit(func(int) { exited = true; panic(helpExit{}) }),
		kong.Resolvers(envResolver{e: e, o: o}),
	)...)
	if err != nil {
		// A mistake in the cli struct itself: a bug, not a usage error.
		return nil, nil, fmt.Errorf("command line definition: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(helpExit); !ok || !exited {
				panic(r)
			}
			kctx, err = nil, errHelp
		}
	}()
	// Usage printed because of a mistake goes to stderr; help asked for
	// goes to stdout.
	k.Stdout = e.stderr
	if len(args) == 0 {
		ctx, _ := kong.Trace(k, nil)
		_ = ctx.PrintUsage(true)
		return nil, nil, usagef("no command given")
	}
	helpRequested := false
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--help" || a == "-h" {
			helpRequested = true
		}
	}
	if helpRequested {
		k.Stdout = e.stdout
	}
	kctx, err = k.Parse(args)
	if err != nil {
		hint := "incidentbot --help"
		var pe *kong.ParseError
		if errors.As(err, &pe) && pe.Context != nil {
			var words []string
			for _, w := range strings.Fields(pe.Context.Command()) {
				if !strings.HasPrefix(w, "<") {
					words = append(words, w)
				}
			}
			if len(words) > 0 {
				hint = "incidentbot " + strings.Join(words, " ") + " --help"
			}
		}
		var ee envError
		if errors.As(err, &ee) {
			err = ee
		}
		return nil, nil, usagef("%v (see %s)", err, hint)
	}
	return kctx, o, nil
}

// kongOptions describe the command line: its name, help layout and the
// variables its tags use.
func kongOptions() []kong.Option {
	return []kong.Option{
		kong.Name("incidentbot"),
		kong.Description(description),
		kong.Vars{"floor": strconv.FormatFloat(matcher.DefaultFloor, 'f', 2, 64)},
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	}
}

// helpExit unwinds kong's parse after it printed help.
type helpExit struct{}

// origin remembers which flags took their value from the environment, so
// that a value out of range is reported under the name the user set.
type origin struct {
	fromEnv map[string]string // flag name → environment variable
}

// name is how the user set the flag: "--workers" or "INCIDENTBOT_WORKERS".
func (o *origin) name(flag string) string {
	if o != nil {
		if v, ok := o.fromEnv[flag]; ok {
			return v
		}
	}
	return "--" + flag
}

// errorf is a usage error about one flag, named as the user set it.
func (o *origin) errorf(flag, format string, args ...any) error {
	return usagef("%s %s", o.name(flag), fmt.Sprintf(format, args...))
}

// envResolver gives a flag the value of its environment variable (its env
// tag) when the command line does not set it. It reads through env.getenv,
// so tests pass their own environment. An empty variable counts as unset.
// A value the flag cannot take is an error that names the variable.
type envResolver struct {
	e env
	o *origin
}

func (r envResolver) Validate(*kong.Application) error { return nil }

func (r envResolver) Resolve(kctx *kong.Context, _ *kong.Path, flag *kong.Flag) (any, error) {
	for _, name := range flag.Tag.Envs {
		v := r.e.getenv(name)
		if v == "" {
			continue
		}
		// Parse into a scratch value first, so the error names the
		// variable rather than the flag.
		scratch := reflect.New(flag.Target.Type()).Elem()
		if err := flag.Parse(kong.ScanFromTokens(kong.Token{Type: kong.FlagValueToken, Value: v}), scratch); err != nil {
			return nil, envError{name, v, unwrapFlag(err)}
		}
		if flag.Enum != "" {
			if err := checkEnum(flag, v); err != nil {
				return nil, envError{name, v, err}
			}
		}
		r.o.fromEnv[flag.Name] = name
		return v, nil
	}
	// Kong itself reads the process environment for env tags before the
	// resolvers run; an empty variable there must not stand as a value.
	for _, name := range flag.Tag.Envs {
		if r.e.getenv(name) == "" && flag.HasDefault {
			return flag.Default, nil
		}
	}
	return nil, nil
}

// envError is a value in the environment that its flag cannot take.
type envError struct {
	name, value string
	err         error
}

func (e envError) Error() string {
	return fmt.Sprintf("environment variable %s=%q: %v", e.name, e.value, e.err)
}

func checkEnum(flag *kong.Flag, v string) error {
	for _, ok := range flag.EnumSlice() {
		if v == ok {
			return nil
		}
	}
	return fmt.Errorf("must be one of %s", strings.Join(quoteAll(flag.EnumSlice()), ","))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// unwrapFlag drops kong's "--flag: " prefix, which would name the flag
// although the value came from the environment.
func unwrapFlag(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, ": "); i > 0 && strings.HasPrefix(msg, "--") {
		return errors.New(msg[i+2:])
	}
	return err
}

// duration is a length of time written as a Go duration ("90s", "12h",
// "1h30m") or with a leading count of days ("180d", "7d12h"). Every
// duration flag and variable takes the same forms.
type duration time.Duration

func (d *duration) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("duration", &s); err != nil {
		return err
	}
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

func (d duration) String() string { return formatDuration(time.Duration(d)) }

// parseDuration reads a duration as described at duration.
func parseDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("%q is not a duration like 90s, 12h or 7d", s)
	t := strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(t, 'd'); i >= 0 {
		n, err := strconv.Atoi(t[:i])
		if err != nil || n < 0 || n > 100*365 {
			return 0, bad
		}
		days, t = time.Duration(n)*24*time.Hour, t[i+1:]
		if t == "" {
			return days, nil
		}
	}
	v, err := time.ParseDuration(t)
	if err != nil || v < 0 {
		return 0, bad
	}
	return days + v, nil
}

// formatDuration writes a duration the way parseDuration reads it, with
// whole days as "d": 180d, 12h0m0s, 1d12h0m0s.
func formatDuration(d time.Duration) string {
	day := 24 * time.Hour
	if d >= day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	if d > day {
		return strconv.FormatInt(int64(d/day), 10) + "d" + (d % day).String()
	}
	return d.String()
}

// inRange checks an integer flag against its bounds.
func (o *origin) inRange(flag string, v, lo, hi int) error {
	if v < lo || v > hi {
		return o.errorf(flag, "must be between %d and %d, got %d", lo, hi, v)
	}
	return nil
}

// durationIn checks a duration flag against its bounds.
func (o *origin) durationIn(flag string, v duration, lo, hi time.Duration) error {
	if time.Duration(v) < lo || time.Duration(v) > hi {
		return o.errorf(flag, "must be between %s and %s, got %s", formatDuration(lo), formatDuration(hi), v)
	}
	return nil
}

// execute parses args and runs the chosen command.
func execute(ctx context.Context, args []string, e env) error {
	kctx, o, err := parse(args, e)
	if err != nil {
		return err
	}
	kctx.BindTo(ctx, (*context.Context)(nil))
	return kctx.Run(e, o)
}
