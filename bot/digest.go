package bot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/digest"
)

// Digests gives the bot this week's digest for a channel and when the next
// one is due; *digest.Scheduler with a clock implements it (wired in cmd).
type Digests interface {
	// Preview composes the digest channel would get for the week that ends
	// now, in its configured language (or lang when it has none).
	Preview(ctx context.Context, channel string, lang cases.Lang) (*digest.Digest, error)
	// Next lists when each target's next digest is due.
	Next() []DigestDue
}

// DigestDue is when a channel's next digest is due.
type DigestDue struct {
	Channel string
	At      time.Time
}

// RenderDigest renders a digest as Block Kit with a plain-text fallback,
// within Slack's limits whatever the week held.
func RenderDigest(d *digest.Digest, tax labeler) ([]slack.Block, string) {
	l := d.Lang
	blocks := []slack.Block{slack.NewHeaderBlock(plain(clip(d.Title(), maxHeaderText)))}
	section := func(text string) {
		if strings.TrimSpace(text) != "" && len(blocks) < maxBlocks {
			blocks = append(blocks, slack.NewSectionBlock(mrkdwn(text), nil, nil))
		}
	}
	if d.Quiet {
		section(digest.Say(l, "quiet"))
	} else {
		section(digest.Say(l, "activity", d.Suggestions, d.Channels, d.PrevSuggestions, d.PrevChannels))
		counts := func(heading string, kind cases.Kind, cs []digest.Count) {
			if len(cs) == 0 {
				return
			}
			var b strings.Builder
			fmt.Fprintf(&b, "*%s*", digest.Say(l, heading))
			for _, c := range cs {
				fmt.Fprintf(&b, "\n• %s: %d (%s)", escape(tax.Label(kind, c.ID, l)), c.N, digest.Change(l, c))
			}
			section(b.String())
		}
		counts("symptoms", cases.KindSymptom, d.Symptoms)
		counts("components", cases.KindComponent, d.Components)
		caseList := func(heading string, cs []digest.CaseCount) {
			if len(cs) == 0 {
				return
			}
			var b strings.Builder
			fmt.Fprintf(&b, "*%s*", digest.Say(l, heading))
			for _, c := range cs {
				fmt.Fprintf(&b, "\n• %s · %s", caseLink(c.Case, l), digest.Say(l, "votes", c.N, c.Helpful, c.NotRelevant))
			}
			section(b.String())
		}
		caseList("cases", d.TopCases)
		caseList("notrelevant", d.NotRelevant)
	}
	if d.AddedTotal > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "*%s*", digest.Say(l, "added"))
		for _, c := range d.Added {
			fmt.Fprintf(&b, "\n• %s", caseLink(c, l))
		}
		if more := d.AddedTotal - len(d.Added); more > 0 {
			fmt.Fprintf(&b, "\n• %s", digest.Say(l, "more", more))
		}
		section(b.String())
	}
	if c := d.CaseOfWeek; c != nil {
		blocks = append(blocks, slack.NewDividerBlock())
		var b strings.Builder
		fmt.Fprintf(&b, "*%s:* %s\n%s · %s", digest.Say(l, "cow"), caseLink(c, l), escape(c.Org), c.Date)
		if !c.Lessons.Empty() {
			fmt.Fprintf(&b, "\n*%s:* %s", digest.Say(l, "lesson"), escape(clip(c.Lessons.In(l), 900)))
		}
		if len(c.ActionItems) > 0 {
			fmt.Fprintf(&b, "\n*%s*", digest.Say(l, "actions"))
			for i, a := range c.ActionItems {
				if i == 4 {
					break
				}
				fmt.Fprintf(&b, "\n• %s", escape(clip(a.Text.In(l), 300)))
			}
		}
		section(b.String())
	}
	return blocks, clip(d.Title(), 3000)
}

func caseLink(c *cases.Case, lang cases.Lang) string {
	return fmt.Sprintf("%s (`%s`)", sourceLink(c, escape(clip(c.Title.In(lang), 200))), escape(c.ID))
}

// PostDigest posts a digest to a channel (not in a thread) and returns its
// ts. It implements digest.Poster.
func (b *Bot) PostDigest(ctx context.Context, channel string, d *digest.Digest) (string, error) {
	blocks, fallback := RenderDigest(d, b.opts.Taxonomy)
	return b.post.post(ctx, channel, "", blocks, fallback)
}

// onHomeOpened publishes the App Home tab: this week's activity so far and
// when the next digests are due.
func (b *Bot) onHomeOpened(ctx context.Context, user string) {
	if user == "" {
		return
	}
	lang := b.opts.DefaultLang
	var blocks []slack.Block
	if b.opts.Digests == nil {
		blocks, _ = renderText(say(lang, "no_digests"))
	} else {
		d, err := b.opts.Digests.Preview(ctx, "", lang)
		if err != nil {
			b.log.Warn("composing the home tab failed", "err", err)
			blocks, _ = renderText(say(lang, "error"))
		} else {
			blocks, _ = RenderDigest(d, b.opts.Taxonomy)
			blocks[0] = slack.NewHeaderBlock(plain(say(lang, "home_heading")))
		}
		var next []string
		for _, due := range b.opts.Digests.Next() {
			next = append(next, fmt.Sprintf("• <#%s>: <!date^%d^{date_short_pretty} {time}|%s>", due.Channel, due.At.Unix(), due.At.UTC().Format(time.RFC1123)))
		}
		if len(next) > 0 && len(blocks) < maxBlocks {
			blocks = append(blocks, slack.NewSectionBlock(mrkdwn("*"+say(lang, "next_digest")+"*\n"+strings.Join(next, "\n")), nil, nil))
		}
	}
	if len(blocks) > 100 { // the App Home limit
		blocks = blocks[:100]
	}
	err := b.post.call(ctx, "views.publish", "", false, func(ctx context.Context) error {
		_, err := b.api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: user,
			View: slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: blocks}}})
		return err
	})
	if err != nil {
		b.log.Warn("publishing the home tab failed", "err", err)
	}
}

// digestPayload answers /incidents digest with this channel's digest for
// the week that ends now.
func (b *Bot) digestPayload(ctx context.Context, channel string, lang cases.Lang) map[string]any {
	if b.opts.Digests == nil {
		return ephemeralPayload(renderText(say(lang, "no_digests")))
	}
	d, err := b.opts.Digests.Preview(ctx, channel, lang)
	if err != nil {
		b.log.Error("digest preview failed", "channel", channel, "err", err)
		return ephemeralPayload(renderText(say(lang, "error")))
	}
	return fitPayload(ephemeralPayload(RenderDigest(d, b.opts.Taxonomy)))
}
