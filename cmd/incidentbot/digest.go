package main

import (
	"context"
	"fmt"
	"time"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/digest"
)

func cmdDigest(ctx context.Context, args []string, e env) error {
	if len(args) == 0 {
		return usagef("digest needs a subcommand: preview or next")
	}
	switch args[0] {
	case "preview":
		return digestPreview(ctx, args[1:], e)
	case "next":
		return digestNext(args[1:], e)
	}
	return usagef("unknown digest subcommand %q: use preview or next", args[0])
}

func digestPreview(ctx context.Context, args []string, e env) error {
	fs := newFlagSet("digest preview", "digest preview [--channel C] [--week 2026-W48] [--lang en|ko] [--json]", e)
	var lf libFlags
	lf.register(fs, e)
	var sf storeFlags
	sf.register(fs, e)
	var df digestFlags
	df.register(fs, e)
	channel := fs.String("channel", "", "the channel the digest is for: its private activity counts only in its own digest (default: public activity only)")
	week := fs.String("week", "", "ISO week to preview, e.g. 2026-W48 (default: the seven days up to now)")
	lang := fs.String("lang", "", "en or ko (default: the channel's configured language, else en)")
	asJSON := fs.Bool("json", false, "print the Block Kit JSON that would be posted")
	if pos, err := parseInterspersed(fs, args); err != nil {
		return flagError(err)
	} else if len(pos) > 0 {
		return usagef("digest preview takes no arguments, got %q", pos[0])
	}
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
		if l != cases.English && l != cases.Korean {
			return usagef("--lang must be en or ko, got %q", *lang)
		}
	}
	w := digest.WeekBefore(time.Now(), loc)
	if *week != "" {
		if w, err = digest.ParseWeek(*week, loc); err != nil {
			return usageError{err.Error()}
		}
	}
	lib, err := lf.load(e, e.stderr)
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

func digestNext(args []string, e env) error {
	fs := newFlagSet("digest next", "digest next [--digest TARGET]...", e)
	var df digestFlags
	df.register(fs, e)
	if _, err := parseInterspersed(fs, args); err != nil {
		return flagError(err)
	}
	targets, err := df.parse()
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
