// Package slackfake is a fake Slack for tests: the Web API over httptest and
// Socket Mode over a websocket, recording every call.
//
// It is built to drive the real slack-go client:
//
//	fake := slackfake.New()
//	defer fake.Close()
//	api := slack.New("xoxb-test", slack.OptionAppLevelToken("xapp-test"), slack.OptionAPIURL(fake.APIURL()))
//	client := socketmode.New(api)
//
// Tests push envelopes with SendEvent, SendSlashCommand and SendInteractive,
// wait for the bot's acks with WaitAck, and check what the bot posted with
// Calls and WaitCalls. Every wait takes a context and wakes on state changes,
// never on a timer.
package slackfake

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrClosed is returned by the Wait methods once the server is closed.
var ErrClosed = errors.New("slackfake: server closed")

// Identity is who the bot is in the fake workspace, as auth.test and the
// Socket Mode hello report it.
type Identity struct {
	UserID string // the bot user, "U0FAKEBOT" by default
	User   string // the bot user's name, "incidentbot" by default
	BotID  string // "B0FAKEBOT" by default
	TeamID string // "T0FAKE" by default
	Team   string // "Fake Workspace" by default
	AppID  string // "A0FAKEAPP" by default
}

// Option configures a Server.
type Option func(*config)

type config struct {
	id           Identity
	botToken     string // "" accepts any xoxb- token
	appToken     string // "" accepts any xapp- token
	pingInterval time.Duration
	maxConns     int
	grace        time.Duration
	lean         bool
	triggerTTL   time.Duration
	now          func() time.Time
}

// WithIdentity sets the bot's identity. Empty fields keep their defaults.
func WithIdentity(id Identity) Option {
	return func(c *config) {
		set := func(dst *string, v string) {
			if v != "" {
				*dst = v
			}
		}
		set(&c.id.UserID, id.UserID)
		set(&c.id.User, id.User)
		set(&c.id.BotID, id.BotID)
		set(&c.id.TeamID, id.TeamID)
		set(&c.id.Team, id.Team)
		set(&c.id.AppID, id.AppID)
	}
}

// WithTokens restricts the accepted tokens: botToken for Web API methods and
// appToken for apps.connections.open. By default any token with the right
// prefix (xoxb- or xapp-) is accepted. Other tokens get ok:false invalid_auth.
func WithTokens(botToken, appToken string) Option {
	return func(c *config) { c.botToken, c.appToken = botToken, appToken }
}

// WithPingInterval sets how often each Socket Mode connection gets a
// WebSocket PING (default 1s, well inside slack-go's 30s watchdog). Zero
// disables pings, to test the client's watchdog.
func WithPingInterval(d time.Duration) Option {
	return func(c *config) { c.pingInterval = d }
}

// WithMaxConnections sets how many Socket Mode connections may be open at
// once (default 10, like Slack). Beyond it apps.connections.open answers
// ok:false too_many_websockets (an error code of the fake's own).
func WithMaxConnections(n int) Option {
	return func(c *config) { c.maxConns = n }
}

// WithLean makes the fake keep only what a load test needs, so that its own
// memory does not hide the client's: recorded calls keep their method,
// channel, ts, thread, status and time but not their bodies, and an acked
// envelope keeps its ack time but not its payload.
func WithLean() Option {
	return func(c *config) { c.lean = true }
}

// Fault is an injected failure for the next calls of a method.
type Fault struct {
	// Status is the HTTP status to answer, such as 429 or 500. Zero means 200.
	Status int
	// RetryAfter sets the Retry-After header, rounded up to whole seconds.
	RetryAfter time.Duration
	// Error answers {"ok":false,"error":Error} with status 200.
	Error string
	// Delay holds the answer back, as a slow Slack would.
	Delay time.Duration
}

// Call is one recorded request to the Web API or a response_url. A call is
// recorded before it is answered. Treat its maps and slices as read-only.
type Call struct {
	Method string    // "chat.postMessage", …, or "response_url"
	Time   time.Time // when the request arrived
	Token  string    // from the token form field or the Bearer header
	URL    string    // the request path, e.g. "/api/chat.postMessage"

	Form url.Values     // the raw form of form-encoded requests
	JSON map[string]any // the decoded body of JSON requests

	// Message fields of chat.* and response_url calls.
	Channel     string
	TS          string // the ts assigned (postMessage) or targeted (update, delete)
	ThreadTS    string
	Text        string
	Blocks      []map[string]any // decoded from the blocks JSON
	Attachments []map[string]any
	Metadata    map[string]any
	UnfurlLinks string // the raw form value: "", "true" or "false"
	UnfurlMedia string

	// response_url fields.
	ResponseType    string
	ReplaceOriginal bool
	DeleteOriginal  bool

	Status int    // the HTTP status the fake answered
	Error  string // the ok:false error the fake answered, "" on success
}

// Server is a fake Slack. It is safe for concurrent use.
//
// Its embedded Sender spreads envelopes round-robin over the open
// connections; SendTo targets one connection.
type Server struct {
	Sender

	cfg  config
	srv  *httptest.Server
	stop chan struct{} // closed by Close
	wg   sync.WaitGroup

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every state change
	closed  bool

	calls    []Call
	faults   map[string][]Fault
	channels map[string]channel
	users    map[string]string   // user id -> name
	messages map[string]bool     // channel+"/"+ts of live messages
	threads  map[string][]string // channel+"/"+thread ts -> ts of replies posted
	reacted  map[string]bool     // channel+"/"+ts+"/"+name
	seq      int                 // source of ts, ids and tickets
	tickets  map[string]bool     // issued, not yet used
	conns    []*conn             // open connections, oldest first
	rr       int                 // round-robin cursor
	opened   int                 // connections ever opened
	maxPongs int                 // most PINGs one connection answered
	envs     map[string]*envelope
	pending  []*envelope // waiting for a connection

	history   map[string][]map[string]any // channel -> messages, oldest first
	pins      map[string][]string         // channel -> ts of pinned messages
	groups    map[string][]string         // user group id -> members
	triggers  map[string]*trigger         // trigger_id -> when it was issued
	views     map[string]map[string]any   // view id -> the view
	viewOrder []string                    // view ids, oldest first
}

type channel struct {
	name    string
	private bool
	outside bool // the bot is not a member
	topic   string
	purpose string
}

// New starts a fake Slack. Close it when done.
func New(opts ...Option) *Server {
	cfg := config{
		id: Identity{
			UserID: "U0FAKEBOT", User: "incidentbot", BotID: "B0FAKEBOT",
			TeamID: "T0FAKE", Team: "Fake Workspace", AppID: "A0FAKEAPP",
		},
		pingInterval: time.Second,
		maxConns:     10,
		grace:        2 * time.Second,
		triggerTTL:   3 * time.Second,
		now:          time.Now,
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	s := &Server{
		cfg:      cfg,
		stop:     make(chan struct{}),
		changed:  make(chan struct{}),
		faults:   map[string][]Fault{},
		channels: map[string]channel{},
		users:    map[string]string{},
		messages: map[string]bool{},
		threads:  map[string][]string{},
		reacted:  map[string]bool{},
		tickets:  map[string]bool{},
		envs:     map[string]*envelope{},
		history:  map[string][]map[string]any{},
		pins:     map[string][]string{},
		groups:   map[string][]string{},
		triggers: map[string]*trigger{},
		views:    map[string]map[string]any{},
	}
	s.Sender = Sender{s: s, conn: -1}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.serveAPI)
	mux.HandleFunc("/response/", s.serveResponseURL)
	mux.HandleFunc("/link/", s.serveLink)
	s.srv = httptest.NewServer(mux)
	return s
}

// Close closes every connection, stops the server and waits for all of its
// goroutines. Stop the clients first, or they will keep reconnecting.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.stop)
	conns := slices.Clone(s.conns)
	s.notifyLocked()
	s.mu.Unlock()

	for _, c := range conns {
		_ = c.ws.Close()
	}
	s.srv.Close()
	s.wg.Wait()
}

// APIURL is the Web API base URL for slack.OptionAPIURL. It ends in "/".
func (s *Server) APIURL() string { return s.srv.URL + "/api/" }

// ResponseURL returns a fresh response_url. What is posted to it is recorded
// as a Call with Method "response_url".
func (s *Server) ResponseURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%s/response/%s", s.srv.URL, s.nextIDLocked("R"))
}

// Identity is the bot's identity in the fake workspace.
func (s *Server) Identity() Identity { return s.cfg.id }

// AddChannel makes conversations.info know a channel.
func (s *Server) AddChannel(id, name string, private bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[id]
	ch.name, ch.private = name, private
	s.channels[id] = ch
}

// SetMember says whether the bot is a member of a channel AddChannel made
// known (it is by default). Outside a public channel, posts fail with
// not_in_channel and conversations.info says is_member false; outside a
// private one, the bot cannot see it: both fail with channel_not_found.
func (s *Server) SetMember(id string, member bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[id]
	ch.outside = !member
	s.channels[id] = ch
}

// AddUser gives a user a name for users.info. Unknown users are answered
// with their id, lowercased, as name.
func (s *Server) AddUser(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[id] = name
}

// FailNext makes the next n calls of method (such as "chat.postMessage",
// "apps.connections.open" or "response_url") fail with f.
func (s *Server) FailNext(method string, n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[method] = append(s.faults[method], f)
	}
}

// Calls returns a copy of the calls recorded for method, oldest first.
// An empty method returns every call.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callsLocked(method)
}

func (s *Server) callsLocked(method string) []Call {
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// WaitCalls waits until at least n calls of method were recorded and
// returns them all.
func (s *Server) WaitCalls(ctx context.Context, method string, n int) ([]Call, error) {
	var out []Call
	err := s.wait(ctx, func() bool {
		out = s.callsLocked(method)
		return len(out) >= n
	})
	if err != nil {
		return out, fmt.Errorf("wait for %d %s calls (have %d): %w", n, method, len(out), err)
	}
	return out, nil
}

// WaitCall waits for a recorded call, past or future, for which match
// returns true, and returns the first such call.
func (s *Server) WaitCall(ctx context.Context, match func(Call) bool) (Call, error) {
	var found Call
	err := s.wait(ctx, func() bool {
		for _, c := range s.calls {
			if match(c) {
				found = c
				return true
			}
		}
		return false
	})
	return found, err
}

// wait calls done under the lock on every state change until it returns true.
func (s *Server) wait(ctx context.Context, done func() bool) error {
	for {
		s.mu.Lock()
		if done() {
			s.mu.Unlock()
			return nil
		}
		closed, changed := s.closed, s.changed
		s.mu.Unlock()
		if closed {
			return ErrClosed
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// notifyLocked wakes every waiter. The caller holds s.mu.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// nextIDLocked returns a fresh id such as "Ev0000000012".
func (s *Server) nextIDLocked(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s%010d", prefix, s.seq)
}

// nextTSLocked returns a fresh, increasing message ts such as "1700000000.000100".
func (s *Server) nextTSLocked() string {
	s.seq++
	micros := int64(1_700_000_000_000_000) + int64(s.seq)*100
	return fmt.Sprintf("%d.%06d", micros/1_000_000, micros%1_000_000)
}

// record stores a finished call and wakes waiters.
func (s *Server) record(c Call) {
	if s.cfg.lean {
		c.Form, c.JSON, c.Blocks, c.Attachments, c.Metadata, c.Text = nil, nil, nil, nil, nil, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	s.notifyLocked()
}

// takeFault pops the next injected fault for method.
func (s *Server) takeFault(method string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.faults[method]
	if len(q) == 0 {
		return Fault{}, false
	}
	s.faults[method] = q[1:]
	return q[0], true
}

// tokenOK reports whether tok is accepted; app selects the app-level token.
func (s *Server) tokenOK(tok string, app bool) bool {
	want, prefix := s.cfg.botToken, "xoxb-"
	if app {
		want, prefix = s.cfg.appToken, "xapp-"
	}
	if want != "" {
		return tok == want
	}
	return strings.HasPrefix(tok, prefix)
}
