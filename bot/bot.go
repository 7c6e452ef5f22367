// Package bot is incidentbot in Slack: a Socket Mode client that replies in
// thread to alerts and messages in incident channels with the most similar
// past cases, answers the /incidents command, app mentions and the "Find
// similar incidents" shortcut, and records feedback. It is the only package
// that imports slack-go.
package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/store"
)

// Searcher finds cases like a text; *matcher.Matcher implements it. Every
// lookup names the channel it answers in: a team case captured in a private
// channel is found only there.
type Searcher interface {
	// MatchWith matches a text with the votes cast on similar texts, for
	// the channel it answers in.
	MatchWith(ctx context.Context, text string, top int, opts matcher.MatchOptions) (*matcher.Answer, error)
	SearchWith(ctx context.Context, query string, top int, opts matcher.MatchOptions) (*matcher.Answer, error)
	CaseIn(id, channel string) (*cases.Case, bool)
}

// Recorder keeps what the bot suggested and the votes it got;
// *store.Buffered implements it. Its methods must not block: a store
// behind it buffers and retries.
type Recorder interface {
	RecordSuggestionAsync(store.Suggestion)
	RecordFeedbackAsync(store.Feedback)
}

// Inbox records events before they are acked; the activity store
// implements it (adapted in cmd).
type Inbox interface {
	// Put records an event and reports whether it is new (false for a
	// redelivery).
	Put(ctx context.Context, key, kind string, payload []byte) (bool, error)
	// Done marks an event handled.
	Done(ctx context.Context, key string) error
	// Orphans takes over up to limit events whose holder stopped before
	// handling them.
	Orphans(ctx context.Context, limit int) ([]store.InboxItem, error)
	// Renew keeps this replica's unhandled events its own for another
	// lease: however long its queue, only a stopped replica's events expire.
	Renew(ctx context.Context) error
}

// Options configure the bot. Tokens come from the environment, parsed in
// cmd; the bot never logs them.
type Options struct {
	AppToken string // xapp-…
	BotToken string // xoxb-…
	APIURL   string // Slack Web API base URL; empty for Slack itself

	ChannelPatterns []string // incident channel name patterns (path.Match), e.g. inc-*
	ChannelIDs      []string // incident channel ids

	Top         int           // cases per reply; default 3
	DefaultLang cases.Lang    // reply language when the text does not tell; default en
	Workers     int           // default 4
	MaxCommands int           // slash commands answered at once; more get a "busy" answer; default 32
	QueueSize   int           // default 1000
	PostEvery   time.Duration // per-channel pacing; default 1s
	Grace       time.Duration // shutdown drain; default 10s
	AlertRepeat time.Duration // the same alert again within this gets no reply; default 30m
	DedupeTTL   time.Duration // how long event ids are remembered; default 15m
	ClaimTTL    time.Duration // how long a claim to post a thread's first reply holds; default 30s

	Logger   *slog.Logger
	Registry *prometheus.Registry // metrics; a new one when nil
	Recorder Recorder             // optional
	Digests  Digests              // optional: /incidents digest and the App Home tab
	// Inbox, when set, records each event before it is acked, so that an
	// event acked by a replica that then dies is taken over by another.
	Inbox        Inbox
	InboxTimeout time.Duration // bound on recording an event before its ack; default 300ms
	OrphanEvery  time.Duration // how often to renew this replica's events and look for those a stopped one left; default 10s

	// Checks are the health of the parts the bot can answer without (the
	// activity store). They run in the background every CheckEvery; the
	// probes answer from their last result (see Handler).
	Checks     map[string]func(context.Context) error
	CheckEvery time.Duration   // default 5s
	State      State           // shared state; in memory when nil
	Taxonomy   *cases.Taxonomy // tag labels; the default taxonomy when nil
	// TeamCases, when set, lets people capture incidents as team cases
	// (/incidents capture, the "Save as incident case" shortcut) and edit
	// and delete them; a team case captured in a private channel is then
	// suggested only there.
	TeamCases TeamCases
	// RefreshLibrary is called after a team case is saved or deleted, so
	// that this replica's library has the change at once.
	RefreshLibrary func(ctx context.Context) error
	// AdminGroup is the id of the Slack user group whose members may delete
	// any team case (others only those they captured).
	AdminGroup string
	// Votes, when set, are read every VoteRefresh so that the votes cast
	// in the workspace, on any replica, steer replies to similar texts;
	// votes cast on this replica steer its replies at once either way.
	Votes       VoteReader
	VoteWindow  time.Duration // votes older than this do not steer; default 180 days (the retention)
	VoteRefresh time.Duration // default 30s
	// PublicURL is where the library page is served (incidentbot serve or
	// run --api-addr); when set, each suggested case links to its page there.
	PublicURL string
}

func (o *Options) defaults() {
	if o.Top <= 0 {
		o.Top = 3
	}
	if o.DefaultLang == "" {
		o.DefaultLang = cases.English
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.MaxCommands <= 0 {
		o.MaxCommands = 32
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 1000
	}
	if o.PostEvery <= 0 {
		o.PostEvery = time.Second
	}
	if o.Grace <= 0 {
		o.Grace = 10 * time.Second
	}
	if o.AlertRepeat <= 0 {
		o.AlertRepeat = 30 * time.Minute
	}
	if o.DedupeTTL <= 0 {
		o.DedupeTTL = 15 * time.Minute
	}
	if o.ClaimTTL <= 0 {
		o.ClaimTTL = 30 * time.Second
	}
	if o.InboxTimeout <= 0 {
		o.InboxTimeout = 300 * time.Millisecond
	}
	if o.OrphanEvery <= 0 {
		o.OrphanEvery = 10 * time.Second
	}
	if o.VoteWindow <= 0 {
		o.VoteWindow = 180 * 24 * time.Hour
	}
	if o.VoteRefresh <= 0 {
		o.VoteRefresh = 30 * time.Second
	}
	if o.CheckEvery <= 0 {
		o.CheckEvery = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.State == nil {
		o.State = newMemState(time.Now)
	}
	if o.Taxonomy == nil {
		o.Taxonomy = cases.DefaultTaxonomy()
	}
}

// CheckTokens checks the form of the tokens, so that a wrong variable fails
// at start with a message saying which to set. It never echoes a token.
func CheckTokens(appToken, botToken string) error {
	switch {
	case appToken == "":
		return errors.New("SLACK_APP_TOKEN is not set: set it to the app-level token (xapp-…) with the connections:write scope")
	case !strings.HasPrefix(appToken, "xapp-"):
		return errors.New("SLACK_APP_TOKEN does not start with xapp-: use the app-level token from Basic Information → App-Level Tokens")
	case botToken == "":
		return errors.New("SLACK_BOT_TOKEN is not set: set it to the bot token (xoxb-…) from OAuth & Permissions")
	case !strings.HasPrefix(botToken, "xoxb-"):
		return errors.New("SLACK_BOT_TOKEN does not start with xoxb-: use the Bot User OAuth Token from OAuth & Permissions")
	}
	return nil
}

// Bot is incidentbot's Socket Mode client.
type Bot struct {
	search Searcher
	opts   Options
	log    *slog.Logger
	m      *metrics
	q      *queue

	api    *slack.Client
	client *socketmode.Client
	post   *poster

	userID, botID string // ours, from auth.test
	team          string // the workspace's name, from auth.test
	teamID        string // the workspace, from auth.test: votes steer only here
	scopes        scopeCache
	appID         atomic.Value

	connected      atomic.Bool
	inboxDownUntil atomic.Int64 // unix nanoseconds; inbox puts are skipped until then
	threads        *threads
	channels       *channelCache
	replies        *firstReply
	votes          *votes

	searchMu sync.RWMutex
	health   health

	slashSem chan struct{}    // one value per slash command, capture or save being answered
	pending  chan *pendingAck // envelopes being recorded, to ack in order

	dropMu   sync.Mutex
	dropKeys []string      // inbox keys of jobs dropped from a full queue, to mark done
	dropWake chan struct{} // has a value when dropKeys may have grown
}

// New makes a bot; Run connects it.
func New(s Searcher, opts Options) (*Bot, error) {
	if err := CheckTokens(opts.AppToken, opts.BotToken); err != nil {
		return nil, err
	}
	opts.defaults()
	for _, p := range opts.ChannelPatterns {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("channel pattern %q: %w", p, err)
		}
	}
	b := &Bot{search: s, opts: opts, log: opts.Logger, threads: newThreads(20000), votes: newVotes()}
	b.health.parts = map[string]partState{}
	b.q = newQueue(opts.Workers, opts.QueueSize, b.dropped)
	b.dropWake = make(chan struct{}, 1)
	b.m = newMetrics(opts.Registry, func() float64 { return float64(b.q.len()) })
	apiOpts := []slack.Option{slack.OptionAppLevelToken(opts.AppToken), slack.OptionHTTPClient(&http.Client{Timeout: 15 * time.Second})}
	if opts.APIURL != "" {
		u := opts.APIURL
		if !strings.HasSuffix(u, "/") {
			u += "/"
		}
		apiOpts = append(apiOpts, slack.OptionAPIURL(u))
	}
	b.api = slack.New(opts.BotToken, apiOpts...)
	b.post = newPoster(b.api, opts.PostEvery, b.log, b.m)
	b.post.allowResponses(opts.APIURL)
	b.slashSem = make(chan struct{}, opts.MaxCommands)
	b.channels = newChannelCache(b.api, opts.ChannelPatterns, opts.ChannelIDs)
	b.replies = &firstReply{state: opts.State, ttl: opts.ClaimTTL, find: b.ownReply, now: time.Now, log: b.log}
	return b, nil
}

// SetSearcher swaps the searcher, for reloading the case library; events
// already being handled finish with the old one.
func (b *Bot) SetSearcher(s Searcher) {
	b.searchMu.Lock()
	b.search = s
	b.searchMu.Unlock()
}

func (b *Bot) searcher() Searcher {
	b.searchMu.RLock()
	defer b.searchMu.RUnlock()
	return b.search
}

// Healthy reports whether the Socket Mode connection is up.
func (b *Bot) Healthy() bool { return b.connected.Load() }

// isNetworkError reports whether err is a failure to reach a server at all
// (DNS, refused or reset connections, timeouts), as opposed to an answer.
func isNetworkError(err error) bool {
	var ne net.Error
	var dns *net.DNSError
	var op *net.OpError
	return errors.As(err, &dns) || errors.As(err, &op) || (errors.As(err, &ne) && ne.Timeout()) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// ErrAuth is returned when Slack rejects the tokens.
var ErrAuth = errors.New("slack rejected the tokens")

// Run connects to Slack and handles events until ctx ends, then stops
// taking events, finishes those in flight within the grace period and
// returns nil. It returns an error when it cannot start (bad tokens) or
// Slack ends the connection for good.
func (b *Bot) Run(ctx context.Context) error {
	auth, err := b.api.AuthTestContext(ctx)
	if err != nil {
		var se slack.SlackErrorResponse
		if errors.As(err, &se) {
			return fmt.Errorf("%w: auth.test said %q: check SLACK_BOT_TOKEN", ErrAuth, se.Err)
		}
		if isNetworkError(err) {
			return fmt.Errorf("cannot reach Slack: %w: check the network, DNS and proxy settings (HTTPS_PROXY); the token was not checked", err)
		}
		return fmt.Errorf("auth.test: %w: Slack answered but not as expected; check SLACK_API_URL if set, else try again", err)
	}
	b.userID, b.botID, b.team, b.teamID = auth.UserID, auth.BotID, auth.Team, auth.TeamID
	b.log.Info("connected to slack web api", "team", auth.Team, "team_id", auth.TeamID, "bot_user", auth.UserID, "bot_id", auth.BotID)

	// The votes steer the first replies too: read before taking events
	// (a store that does not answer costs the start voteReadTimeout).
	b.loadVotes(ctx)

	b.client = socketmode.New(b.api)
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	b.q.start(workCtx, b.runJob)
	dropCtx, stopDrop := context.WithCancel(context.WithoutCancel(ctx))
	dropDone := make(chan struct{})
	go func() { b.markDropped(dropCtx); close(dropDone) }()
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	go b.sweepOrphans(sweepCtx)
	go b.runChecks(sweepCtx)
	go b.refreshVotes(sweepCtx)

	sockCtx, stopSock := context.WithCancel(ctx)
	defer stopSock()
	runErr := make(chan error, 1)
	go func() { runErr <- b.client.RunContext(sockCtx) }()
	b.pending = make(chan *pendingAck, maxPendingAcks)
	acked := make(chan struct{})
	go func() { b.ackInOrder(ctx); close(acked) }()

	var result error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-runErr:
			if ctx.Err() == nil {
				result = fmt.Errorf("socket mode connection ended: %w", err)
			}
			break loop
		case evt, ok := <-b.client.Events:
			if !ok {
				break loop
			}
			b.handle(ctx, evt)
		}
	}
	close(b.pending) // ack what was recorded before the connection closes
	<-acked
	b.connected.Store(false)
	stopSock()

	// Drain: no new events; finish queued work within the grace period.
	b.q.close()
	graceCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.opts.Grace)
	defer cancel()
	if err := b.q.wait(graceCtx); err != nil {
		b.log.Warn("shutdown: work still queued after the grace period was dropped", "pending", b.q.len())
		cancelWork()
	}
	stopDrop()
	<-dropDone
	return result
}

// handle takes one Socket Mode event: it acks at once and hands any work to
// the queue. It never blocks on Slack or on matching (slash commands are
// answered from a goroutine within the 3-second window).
func (b *Bot) handle(ctx context.Context, evt socketmode.Event) {
	start := time.Now()
	b.m.events.WithLabelValues(string(evt.Type)).Inc()
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		if b.connected.Swap(false) {
			b.m.reconnects.Inc()
		}
		b.log.Info("socket mode connecting")
	case socketmode.EventTypeConnected, socketmode.EventTypeHello:
		b.connected.Store(true)
		if evt.Request != nil && evt.Request.ConnectionInfo.AppID != "" {
			b.appID.Store(evt.Request.ConnectionInfo.AppID)
		}
	case socketmode.EventTypeConnectionError:
		b.connected.Store(false)
		b.log.Warn("socket mode connection error", "err", evt.Data)
	case socketmode.EventTypeDisconnect:
		b.connected.Store(false)
	case socketmode.EventTypeIncomingError:
		b.log.Debug("socket mode read error", "err", evt.Data)
	case socketmode.EventTypeInvalidAuth:
		b.log.Error("slack rejected the app token: check SLACK_APP_TOKEN")
	case socketmode.EventTypeErrorBadMessage:
		b.ackBadMessage(ctx, evt)
	case socketmode.EventTypeEventsAPI:
		if evt.Request != nil {
			b.onEventsAPI(ctx, evt.Request) // records, then acks, timing the ack itself
		}
		return
	case socketmode.EventTypeInteractive:
		if evt.Request != nil {
			b.onInteractive(ctx, evt.Request) // records, then acks, timing the ack itself
		}
		return
	case socketmode.EventTypeSlashCommand:
		b.onSlashCommand(ctx, evt.Request) // acks with the answer
	default:
		if evt.Request != nil {
			b.ack(ctx, evt.Request, nil)
		}
	}
	b.m.ackTime.Observe(time.Since(start).Seconds())
}

// ackTimeout bounds an ack: during a reconnect slack-go's ack queue can fill.
const ackTimeout = 2 * time.Second

func (b *Bot) ack(ctx context.Context, req *socketmode.Request, payload any) {
	if req == nil || req.EnvelopeID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, ackTimeout)
	defer cancel()
	if err := b.client.AckCtx(ctx, req.EnvelopeID, payload); err != nil {
		b.log.Warn("ack failed", "envelope_id", req.EnvelopeID, "err", err)
	}
}

// ackBadMessage acks an envelope slack-go could not decode, by the envelope
// id read from the raw message; otherwise Slack would redeliver it forever.
func (b *Bot) ackBadMessage(ctx context.Context, evt socketmode.Event) {
	bad, ok := evt.Data.(*socketmode.ErrorBadMessage)
	if !ok {
		b.log.Warn("undecodable socket mode message", "data", fmt.Sprintf("%T", evt.Data))
		return
	}
	var env struct {
		EnvelopeID string `json:"envelope_id"`
		Type       string `json:"type"`
	}
	if err := json.Unmarshal(bad.Message, &env); err != nil || env.EnvelopeID == "" {
		b.log.Warn("undecodable socket mode message without an envelope id", "err", bad.Cause)
		return
	}
	b.ack(ctx, &socketmode.Request{EnvelopeID: env.EnvelopeID}, nil)
	b.log.Warn("acked an envelope slack-go could not decode", "envelope_id", env.EnvelopeID, "type", env.Type, "err", bad.Cause)
}

// runJob runs queued work, recovering from a panic so that one bad event
// never stops the bot.
func (b *Bot) runJob(ctx context.Context, j job) {
	defer func() {
		if r := recover(); r != nil {
			b.m.panics.Inc()
			b.log.Error("recovered from a panic while handling an event", "err", r)
		}
	}()
	j.run(ctx)
}

// isSelf reports whether a message is the bot's own.
func (b *Bot) isSelf(m *message) bool {
	if m.BotID != "" && m.BotID == b.botID {
		return true
	}
	if m.User != "" && m.User == b.userID {
		return true
	}
	if app, _ := b.appID.Load().(string); app != "" && m.AppID == app {
		return true
	}
	return false
}

// langOf returns the language to answer text in.
func (b *Bot) langOf(text string, detected cases.Lang) cases.Lang {
	if detected == cases.Korean {
		return cases.Korean
	}
	for _, r := range text {
		if r > 0x7f || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' {
			return detected
		}
	}
	return b.opts.DefaultLang
}
