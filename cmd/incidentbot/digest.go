package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/digest"
)

// digestCmd is "incidentbot digest".
type digestCmd struct {
	Preview digestPreviewCmd `cmd:"" help:"Print the digest a channel would get for a week."`
	Next    digestNextCmd    `cmd:"" help:"Print when each configured digest is next due."`
}

// digestPreviewCmd is "incidentbot digest preview".
type digestPreviewCmd struct {
	libFlags
	storeFlags
	digestFlags
	Channel string `name:"channel" placeholder:"C" help:"The channel the digest is for: its private activity counts only in its own digest (default: public activity only)."`
	Week    string `name:"week" placeholder:"2026-W48" help:"ISO week to preview (default: the seven days up to now)."`
	Lang    string `name:"lang" enum:",en,ko" default:"" help:"en or ko (default: the channel's configured language, else en)."`
	JSON    bool   `name:"json" help:"Print the Block Kit JSON that would be posted."`
}

func (c *digestPreviewCmd) Run(ctx context.Context, e env) error {
	df, sf, lf := c.digestFlags, c.storeFlags, c.libFlags
	channel, week, lang, asJSON := &c.Channel, &c.Week, &c.Lang, &c.JSON
	targets, err := df.parse()
	if err != nil {
		return err
	}
	l, loc := cases.English, time.UTC
	for _, t := range targets {
		if t.Channel == *channel {
			l, loc = t.Lang, t.Location
		}
	}
	if *lang != "" {
		l = cases.Lang(*lang)
	}
	w := digest.WeekBefore(time.Now(), loc)
	if *week != "" {
		if w, err = digest.ParseWeek(*week, loc); err != nil {
			return usageError{err.Error()}
		}
	}
	sets, _, err := lf.loadSets(ctx, e.stderr)
	if err != nil {
		return err
	}
	if _, err := mergeSets(sets, e.stderr); err != nil {
		return err
	}
	// A preview only reads: it must not create an empty store where the
	// bot's is not.
	if e.getenv("DATABASE_URL") == "" {
		path, err := sf.sqlitePath()
		if err != nil {
			return err
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no activity store at %s: point --db (or INCIDENTBOT_DB) at the file the bot writes, or set DATABASE_URL", path)
		}
	}
	st, _, err := sf.open(ctx, e, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	tc, err := readTeamCases(ctx, st, lf.tax())
	if err != nil {
		return err
	}
	lib := publicLibrary(sets, tc)
	s := digest.New(digest.Options{Store: st, Library: func() *cases.Library { return lib }})
	d, err := s.Compose(ctx, *channel, w, l)
	if err != nil {
		return err
	}
	tax := c.tax()
	if *asJSON {
		blocks, text := bot.RenderDigest(d, tax)
		return writeJSON(e.stdout, map[string]any{"text": text, "blocks": blocks})
	}
	fmt.Fprint(termWriter{e.stdout}, d.Text(tax))
	return nil
}

// digestNextCmd is "incidentbot digest next".
type digestNextCmd struct {
	digestFlags
}

func (c *digestNextCmd) Run(e env) error {
	targets, err := c.parse()
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		return usagef("no digest targets: pass --digest CHANNEL[;SPEC[;LANG]] or set INCIDENTBOT_DIGESTS")
	}
	now := time.Now()
	for _, t := range targets {
		next := t.Next(now)
		fmt.Fprintf(e.stdout, "%s\t%s\t%s (%s)\t%s\n", t.Channel, t.Lang, next.Format("Mon 2006-01-02 15:04 MST"), humanIn(next.Sub(now)), t.Spec)
	}
	return nil
}

// humanIn says how far ahead d is the way a person would: "in 5 days 10
// hours", "in 3 hours 5 minutes", "in 1 minute", "now".
func humanIn(d time.Duration) string {
	d = d.Round(time.Minute)
	days, hours, mins := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour), int(d%time.Hour/time.Minute)
	var parts []string
	switch {
	case days > 0:
		parts = append(parts, plural(days, "day"))
		if hours > 0 {
			parts = append(parts, plural(hours, "hour"))
		}
	case hours > 0:
		parts = append(parts, plural(hours, "hour"))
		if mins > 0 {
			parts = append(parts, plural(mins, "minute"))
		}
	case mins > 0:
		parts = append(parts, plural(mins, "minute"))
	default:
		return "now"
	}
	return "in " + strings.Join(parts, " ")
}

// plural writes a count and its noun: "1 error", "2 errors".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
