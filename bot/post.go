package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// poster sends messages to Slack, paced to Slack's rate of about one message
// per second per channel, and retries a call that Slack rate-limited after
// the delay Slack asked for.
type poster struct {
	api      *slack.Client
	interval time.Duration
	retries  int
	log      *slog.Logger
	m        *metrics

	// respondTo are the prefixes a response_url may have: Slack's, and the
	// configured API's origin (a test's fake Slack).
	respondTo []string

	mu   sync.Mutex
	next map[string]time.Time // channel -> earliest time of its next post
}

func newPoster(api *slack.Client, interval time.Duration, log *slog.Logger, m *metrics) *poster {
	return &poster{api: api, interval: interval, retries: 5, log: log, m: m, next: map[string]time.Time{}}
}

// wait blocks until channel may be posted to, and reserves the slot.
func (p *poster) wait(ctx context.Context, channel string) error {
	p.mu.Lock()
	now := time.Now()
	at := p.next[channel]
	if at.Before(now) {
		at = now
	}
	p.next[channel] = at.Add(p.interval)
	if len(p.next) > 10000 {
		for ch, t := range p.next {
			if t.Before(now) {
				delete(p.next, ch)
			}
		}
	}
	p.mu.Unlock()
	return sleep(ctx, time.Until(at))
}

// backoff pushes channel's next slot to after d, when Slack said to wait.
func (p *poster) backoff(channel string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if at := time.Now().Add(d); at.After(p.next[channel]) {
		p.next[channel] = at
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// call runs one Web API call, paced on channel when paced is set, retrying
// it after a 429 as long as Slack names a delay and the context allows.
func (p *poster) call(ctx context.Context, method, channel string, paced bool, fn func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		if paced {
			if err := p.wait(ctx, channel); err != nil {
				return err
			}
		}
		err := fn(ctx)
		if err == nil {
			return nil
		}
		var rl *slack.RateLimitedError
		if errors.As(err, &rl) && attempt < p.retries {
			p.log.Warn("slack rate limited the call; retrying", "method", method, "channel", channel, "retry_after", rl.RetryAfter)
			p.m.apiErrors.WithLabelValues(method).Inc()
			p.backoff(channel, rl.RetryAfter)
			if !paced {
				if err := sleep(ctx, rl.RetryAfter); err != nil {
					return err
				}
			}
			continue
		}
		p.m.apiErrors.WithLabelValues(method).Inc()
		return fmt.Errorf("%s: %w", method, err)
	}
}

// common options of every message the bot sends: no unfurling.
func msgOptions(blocks []slack.Block, fallback string, extra ...slack.MsgOption) []slack.MsgOption {
	opts := []slack.MsgOption{
		slack.MsgOptionBlocks(blocks...),
		slack.MsgOptionText(fallback, false),
		slack.MsgOptionDisableLinkUnfurl(),
		slack.MsgOptionDisableMediaUnfurl(),
	}
	return append(opts, extra...)
}

// post posts a message in a thread, in the channel's turn, and returns its
// ts.
func (p *poster) post(ctx context.Context, channel, threadTS string, blocks []slack.Block, fallback string) (string, error) {
	if err := p.wait(ctx, channel); err != nil {
		return "", err
	}
	return p.postNow(ctx, channel, threadTS, blocks, fallback)
}

// postNow posts in a thread without waiting for the channel's turn: the
// caller has waited already.
func (p *poster) postNow(ctx context.Context, channel, threadTS string, blocks []slack.Block, fallback string) (string, error) {
	var ts string
	err := p.call(ctx, "chat.postMessage", channel, false, func(ctx context.Context) error {
		var err error
		_, ts, err = p.api.PostMessageContext(ctx, channel, msgOptions(blocks, fallback, slack.MsgOptionTS(threadTS))...)
		return err
	})
	return ts, err
}

// update replaces a message the bot posted.
func (p *poster) update(ctx context.Context, channel, ts string, blocks []slack.Block, fallback string) error {
	return p.call(ctx, "chat.update", channel, true, func(ctx context.Context) error {
		_, _, _, err := p.api.UpdateMessageContext(ctx, channel, ts, msgOptions(blocks, fallback)...)
		return err
	})
}

// ephemeral shows a message to one user in a channel (in a thread when
// threadTS is set). Ephemeral messages are not paced: they do not count
// against the channel's message rate.
func (p *poster) ephemeral(ctx context.Context, channel, user, threadTS string, blocks []slack.Block, fallback string) error {
	extra := []slack.MsgOption{}
	if threadTS != "" {
		extra = append(extra, slack.MsgOptionTS(threadTS))
	}
	return p.call(ctx, "chat.postEphemeral", channel, false, func(ctx context.Context) error {
		_, err := p.api.PostEphemeralContext(ctx, channel, user, msgOptions(blocks, fallback, extra...)...)
		return err
	})
}

// slackResponseURL is the prefix of every response_url Slack gives out.
const slackResponseURL = "https://hooks.slack.com/"

// errResponseURL is returned for a response_url that is not Slack's.
var errResponseURL = errors.New("response_url is not Slack's (https://hooks.slack.com/): not posting to it")

// allowResponses sets the response_url prefixes allowed besides Slack's:
// the origin (scheme and host) of apiURL, when it is not Slack's own.
func (p *poster) allowResponses(apiURL string) {
	p.respondTo = []string{slackResponseURL}
	if u, err := url.Parse(apiURL); err == nil && u.Host != "" && u.Host != "slack.com" && (u.Scheme == "https" || u.Scheme == "http") {
		p.respondTo = append(p.respondTo, u.Scheme+"://"+u.Host+"/")
	}
}

// respondable reports whether responseURL is one the bot may post to. A
// response_url comes from the payload, which the inbox stores and another
// replica may read back: posting to any URL it names would send the bot's
// answers, and Slack's token, wherever it says.
func (p *poster) respondable(responseURL string) bool {
	u, err := url.Parse(responseURL)
	if err != nil || u.User != nil || u.Host == "" {
		return false
	}
	norm := u.Scheme + "://" + u.Host + "/"
	for _, prefix := range p.respondTo {
		if norm == prefix {
			return true
		}
	}
	return false
}

// respond posts to an interaction's response_url, if it is Slack's.
func (p *poster) respond(ctx context.Context, responseURL string, blocks []slack.Block, fallback string, extra ...slack.MsgOption) error {
	if !p.respondable(responseURL) {
		return errResponseURL
	}
	opts := append([]slack.MsgOption{slack.MsgOptionResponseURL(responseURL, slack.ResponseTypeEphemeral)}, extra...)
	return p.call(ctx, "response_url", "", false, func(ctx context.Context) error {
		_, _, err := p.api.PostMessageContext(ctx, "", msgOptions(blocks, fallback, opts...)...)
		return err
	})
}
