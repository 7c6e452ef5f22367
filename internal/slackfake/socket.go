package slackfake

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// upgrader accepts any Origin: slack-go sends "Origin: https://api.slack.com",
// which gorilla's default same-origin check rejects with "bad handshake".
var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// writeTimeout bounds every write, so a stalled client cannot wedge the fake.
const writeTimeout = 5 * time.Second

// conn is one Socket Mode connection.
type conn struct {
	ws   *websocket.Conn
	done chan struct{} // closed when the connection is gone

	wmu sync.Mutex // gorilla allows one writer at a time; pings use WriteControl, which is exempt

	// draining is guarded by Server.mu: the connection was told to disconnect,
	// or failed a write, and gets no new envelopes.
	draining bool
	// pongs counts the client's answers to this connection's PINGs
	// (guarded by Server.mu).
	pongs int
}

func (c *conn) write(msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	return c.ws.WriteMessage(websocket.TextMessage, msg)
}

// envelope is a Socket Mode envelope sent (or queued) by the fake.
// All fields are guarded by Server.mu.
type envelope struct {
	id      string
	typ     string // "" for SendRaw envelopes, which cannot be redelivered
	payload json.RawMessage
	accepts bool
	retry   int
	raw     []byte // the frame sent

	sent  time.Time // zero while queued
	acked bool
	ackAt time.Time
	ack   json.RawMessage
}

// wireEnvelope is the JSON Slack sends for events_api, slash_commands and
// interactive envelopes.
type wireEnvelope struct {
	EnvelopeID             string          `json:"envelope_id"`
	Payload                json.RawMessage `json:"payload"`
	Type                   string          `json:"type"`
	AcceptsResponsePayload bool            `json:"accepts_response_payload"`
	RetryAttempt           int             `json:"retry_attempt"`
	RetryReason            string          `json:"retry_reason"`
}

// serveLink upgrades a ticket from apps.connections.open to a Socket Mode
// connection, says hello, pings it and reads acks until it closes.
func (s *Server) serveLink(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	if s.closed || !s.tickets[ticket] {
		s.mu.Unlock()
		http.Error(w, "invalid ticket", http.StatusUnauthorized)
		return
	}
	delete(s.tickets, ticket)
	// httptest stops tracking a request once it is hijacked, so Close waits
	// for this handler through s.wg. Adding under s.mu, with closed false,
	// keeps the Add before Close's Wait.
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the client
	}
	c := &conn{ws: ws, done: make(chan struct{})}
	defer func() {
		s.mu.Lock()
		s.conns = slices.DeleteFunc(s.conns, func(x *conn) bool { return x == c })
		s.notifyLocked()
		s.mu.Unlock()
		close(c.done)
		_ = ws.Close()
	}()

	s.mu.Lock()
	hello, _ := json.Marshal(map[string]any{
		"type":            "hello",
		"num_connections": len(s.liveLocked()) + 1,
		"debug_info": map[string]any{
			"host": "applink-fake", "build_number": 1, "approximate_connection_time": 18060,
		},
		"connection_info": map[string]any{"app_id": s.cfg.id.AppID},
	})
	s.mu.Unlock()
	if c.write(hello) != nil {
		return
	}

	// Only now, after hello, may envelopes go to this connection.
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.conns = append(s.conns, c)
	s.opened++
	pending := s.pending
	s.pending = nil
	if s.cfg.pingInterval > 0 {
		s.wg.Add(1)
		go s.ping(c)
	}
	s.notifyLocked()
	s.mu.Unlock()

	for _, e := range pending {
		s.deliver(e, -1)
	}
	// gorilla calls the pong handler from ReadMessage, in readAcks.
	ws.SetPongHandler(func(string) error {
		s.mu.Lock()
		c.pongs++
		if c.pongs > s.maxPongs {
			s.maxPongs = c.pongs
		}
		s.notifyLocked()
		s.mu.Unlock()
		return nil
	})
	s.readAcks(c)
}

// ping sends WebSocket PINGs, which slack-go's watchdog needs to see at least
// every 30s or it reconnects.
func (s *Server) ping(c *conn) {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.pingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-s.stop:
			return
		case <-t.C:
			if c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeTimeout)) != nil {
				return
			}
		}
	}
}

// readAcks records the client's acks until the connection fails.
func (s *Server) readAcks(c *conn) {
	for {
		typ, msg, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		var res struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if typ != websocket.TextMessage || json.Unmarshal(msg, &res) != nil || res.EnvelopeID == "" {
			continue
		}
		if string(res.Payload) == "null" {
			res.Payload = nil
		}
		s.mu.Lock()
		e := s.envs[res.EnvelopeID]
		if e == nil { // an ack for an envelope the fake never sent
			e = &envelope{id: res.EnvelopeID}
			s.envs[e.id] = e
		}
		if !e.acked {
			e.acked, e.ackAt, e.ack = true, time.Now(), res.Payload
			if s.cfg.lean {
				e.payload, e.raw, e.ack = nil, nil, nil
			}
		}
		s.notifyLocked()
		s.mu.Unlock()
	}
}

// liveLocked returns the connections that take new envelopes, oldest first.
func (s *Server) liveLocked() []*conn {
	var live []*conn
	for _, c := range s.conns {
		if !c.draining {
			live = append(live, c)
		}
	}
	return live
}

// deliver sends e on the at-th live connection, or round-robin when at < 0.
// With no live connection, e waits for the next one.
func (s *Server) deliver(e *envelope, at int) {
	for {
		s.mu.Lock()
		live := s.liveLocked()
		if len(live) == 0 || s.closed {
			s.pending = append(s.pending, e)
			s.mu.Unlock()
			return
		}
		if at >= len(live) {
			s.mu.Unlock()
			panic(fmt.Sprintf("slackfake: SendTo(%d) with %d open connections", at, len(live)))
		}
		var c *conn
		if at >= 0 {
			c = live[at]
		} else {
			c = live[s.rr%len(live)]
			s.rr++
		}
		e.sent = time.Now()
		raw := e.raw
		s.mu.Unlock()

		if c.write(raw) == nil {
			return
		}
		// The socket is broken: keep it out of rotation, close it, try again.
		s.mu.Lock()
		c.draining = true
		e.sent = time.Time{}
		s.mu.Unlock()
		_ = c.ws.Close()
		at = -1
	}
}

// Connections is the number of open Socket Mode connections that take new
// envelopes; connections told to disconnect no longer count.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.liveLocked())
}

// WaitPongs waits until one connection has answered n of the fake's
// PINGs: it stayed open through n ping intervals.
func (s *Server) WaitPongs(ctx context.Context, n int) error {
	return s.wait(ctx, func() bool { return s.maxPongs >= n })
}

// WaitConnected waits until at least n connections take envelopes.
func (s *Server) WaitConnected(ctx context.Context, n int) error {
	err := s.wait(ctx, func() bool { return len(s.liveLocked()) >= n })
	if err != nil {
		return fmt.Errorf("wait for %d connections: %w", n, err)
	}
	return nil
}

// Disconnect sends {"type":"disconnect","reason":reason} on every connection,
// which then gets no new envelopes. Each is closed once the client has
// reconnected, or after the disconnect grace.
func (s *Server) Disconnect(reason string) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	old := s.liveLocked()
	for _, c := range old {
		c.draining = true
	}
	reopened := s.opened + len(old)
	s.wg.Add(1)
	s.notifyLocked()
	s.mu.Unlock()

	msg, _ := json.Marshal(map[string]any{
		"type": "disconnect", "reason": reason, "debug_info": map[string]any{"host": "applink-fake"},
	})
	for _, c := range old {
		_ = c.write(msg)
	}
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.grace)
		defer cancel()
		_ = s.wait(ctx, func() bool { return s.opened >= reopened })
		for _, c := range old {
			_ = c.ws.Close()
		}
	}()
}

// DropConnections closes every connection abruptly, without a close frame.
func (s *Server) DropConnections() {
	s.mu.Lock()
	conns := slices.Clone(s.conns)
	for _, c := range conns {
		c.draining = true
	}
	s.notifyLocked()
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.ws.Close()
	}
}

// WaitAck waits until the envelope is acked and returns the ack's payload,
// nil when the ack carried none.
func (s *Server) WaitAck(ctx context.Context, envelopeID string) (json.RawMessage, error) {
	var e *envelope
	err := s.wait(ctx, func() bool {
		e = s.envs[envelopeID]
		return e != nil && e.acked
	})
	if err != nil {
		return nil, fmt.Errorf("wait for ack of envelope %q: %w", envelopeID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return e.ack, nil
}

// Acked reports whether the envelope was acked.
func (s *Server) Acked(envelopeID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.envs[envelopeID]
	return e != nil && e.acked
}

// AckTime is how long the client took to ack the envelope after it was
// sent, or 0 if it is not acked.
func (s *Server) AckTime(envelopeID string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.envs[envelopeID]
	if e == nil || !e.acked || e.sent.IsZero() {
		return 0
	}
	return e.ackAt.Sub(e.sent)
}

// Sender sends Socket Mode envelopes, on one connection or round-robin over
// all of them. Envelopes sent while no connection is open wait for the next
// one. Unacked envelopes are never redelivered on their own: call Redeliver.
//
// The methods panic on test bugs: a payload that cannot be encoded, an
// unknown envelope id, or a connection index out of range.
type Sender struct {
	s    *Server
	conn int // index into the live connections, or -1 for round-robin
}

// SendTo returns a Sender for the i-th open connection, oldest first.
func (s *Server) SendTo(i int) Sender { return Sender{s: s, conn: i} }

// SendEvent sends an events_api envelope wrapping event (a map, a struct, or
// raw JSON) in an event_callback with a fresh event_id.
func (t Sender) SendEvent(event any) string {
	t.s.mu.Lock()
	id := t.s.nextIDLocked("Ev")
	t.s.mu.Unlock()
	return t.SendEventWithID(id, event)
}

// SendEventWithID is SendEvent with a given event_id, to test deduplication.
func (t Sender) SendEventWithID(eventID string, event any) string {
	id := t.s.cfg.id
	return t.send("events_api", false, map[string]any{
		"token":      "fake-verification-token",
		"team_id":    id.TeamID,
		"api_app_id": id.AppID,
		"event":      rawJSON(event),
		"type":       "event_callback",
		"event_id":   eventID,
		"event_time": time.Now().Unix(),
		"authorizations": []map[string]any{{
			"enterprise_id": nil, "team_id": id.TeamID, "user_id": id.UserID,
			"is_bot": true, "is_enterprise_install": false,
		}},
		"is_ext_shared_channel": false,
		"event_context":         "4-fake",
	})
}

// SendSlashCommand sends a slash_commands envelope. form holds the command's
// fields (command, text, channel_id, user_id, …); team_id, api_app_id,
// response_url and trigger_id are filled in when missing.
func (t Sender) SendSlashCommand(form map[string]string) string {
	payload := map[string]string{
		"token":        "fake-verification-token",
		"team_id":      t.s.cfg.id.TeamID,
		"team_domain":  "fake",
		"api_app_id":   t.s.cfg.id.AppID,
		"response_url": t.s.ResponseURL(),
		"trigger_id":   t.s.triggerID(),
	}
	maps.Copy(payload, form)
	return t.send("slash_commands", true, payload)
}

// SendInteractive sends an interactive envelope, such as a block_actions or
// message_action payload. When payload is a JSON object, api_app_id, team,
// response_url and trigger_id are filled in when missing.
func (t Sender) SendInteractive(payload any) string {
	var m map[string]any
	if json.Unmarshal(rawJSON(payload), &m) != nil {
		return t.send("interactive", false, rawJSON(payload))
	}
	defaults := map[string]any{
		"token":        "fake-verification-token",
		"api_app_id":   t.s.cfg.id.AppID,
		"team":         map[string]any{"id": t.s.cfg.id.TeamID, "domain": "fake"},
		"response_url": t.s.ResponseURL(),
		"trigger_id":   t.s.triggerID(),
	}
	for k, v := range defaults {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	// Slack takes a response in the ack only for these.
	accepts := m["type"] == "view_submission" || m["type"] == "block_suggestion"
	return t.send("interactive", accepts, m)
}

// SendRaw sends raw as one text frame, for malformed or unknown envelopes.
// If raw is JSON with an envelope_id, that id is returned and its ack can be
// awaited.
func (t Sender) SendRaw(raw string) string {
	var head struct {
		EnvelopeID string `json:"envelope_id"`
	}
	_ = json.Unmarshal([]byte(raw), &head)
	e := &envelope{id: head.EnvelopeID, raw: []byte(raw)}
	if e.id != "" {
		t.s.mu.Lock()
		t.s.envs[e.id] = e
		t.s.mu.Unlock()
	}
	t.s.deliver(e, t.conn)
	return e.id
}

// Redeliver sends an envelope again as Slack does after an ack timeout: the
// same payload under a new envelope id, with retry_attempt incremented and
// retry_reason "timeout". It returns the new envelope id.
func (t Sender) Redeliver(envelopeID string) string {
	t.s.mu.Lock()
	e := t.s.envs[envelopeID]
	if e == nil || e.typ == "" {
		t.s.mu.Unlock()
		panic(fmt.Sprintf("slackfake: Redeliver(%q): no such envelope sent by the fake", envelopeID))
	}
	again := t.s.newEnvelopeLocked(e.typ, e.accepts, e.payload, e.retry+1)
	t.s.mu.Unlock()
	t.s.deliver(again, t.conn)
	return again.id
}

// send wraps payload in a new envelope and delivers it.
func (t Sender) send(typ string, accepts bool, payload any) string {
	raw := rawJSON(payload)
	t.s.mu.Lock()
	e := t.s.newEnvelopeLocked(typ, accepts, raw, 0)
	t.s.mu.Unlock()
	t.s.deliver(e, t.conn)
	return e.id
}

func (s *Server) newEnvelopeLocked(typ string, accepts bool, payload json.RawMessage, retry int) *envelope {
	e := &envelope{id: s.nextIDLocked("env-"), typ: typ, payload: payload, accepts: accepts, retry: retry}
	w := wireEnvelope{EnvelopeID: e.id, Payload: payload, Type: typ, AcceptsResponsePayload: accepts, RetryAttempt: retry}
	if retry > 0 {
		w.RetryReason = "timeout"
	}
	e.raw, _ = json.Marshal(w) // payload is valid JSON, so this cannot fail
	s.envs[e.id] = e
	return e
}

// triggerID issues a trigger_id, which views.open takes once within the
// trigger TTL.
func (s *Server) triggerID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextIDLocked("trigger-")
	s.triggers[id] = &trigger{at: s.cfg.now()}
	return id
}

// rawJSON encodes v, passing json.RawMessage, []byte and string through as
// JSON text.
func rawJSON(v any) json.RawMessage {
	var b []byte
	switch v := v.(type) {
	case json.RawMessage:
		b = v
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			panic(fmt.Sprintf("slackfake: encode %T: %v", v, err))
		}
	}
	if !json.Valid(b) {
		panic(fmt.Sprintf("slackfake: not valid JSON: %.200s", b))
	}
	return b
}
