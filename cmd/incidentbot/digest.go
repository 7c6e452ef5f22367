package main

import (
	"context"
	"fmt"
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
	lib, err := lf.load(e.stderr)
	if err != nil {
		return err
	}
	st, _, err := sf.open(ctx, e)
	if err != nil {
		return err
	}
	defer st.Close()
	s := digest.New(digest.Options{Store: st, Library: func() *cases.Library { return lib }})
	d, err := s.Compose(ctx, *channel, w, l)
	if err != nil {
		return err
	}
	tax := cases.DefaultTaxonomy()
	if *asJSON {
		blocks, text := bot.RenderDigest(d, tax)
		return writeJSON(e.stdout, map[string]any{"text": text, "blocks": blocks})
	}
	fmt.Fprint(e.stdout, d.Text(tax))
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
		fmt.Fprintf(e.stdout, "%s\t%s\t%s (%s from now)\t%s\n", t.Channel, t.Lang, next.Format("Mon 2006-01-02 15:04 MST"), next.Sub(now).Round(time.Minute), t.Spec)
	}
	return nil
}
