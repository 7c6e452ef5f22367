package slackfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// reply is the JSON body of an answer, without "ok" and "error".
type reply map[string]any

// handler answers one Web API call. A non-empty code answers ok:false.
type handler func(s *Server, c *Call) (r reply, code string)

// botMethods are the Web API methods called with the bot token.
var botMethods = map[string]handler{
	"auth.test":             (*Server).authTest,
	"chat.postMessage":      (*Server).chatPost,
	"chat.postEphemeral":    (*Server).chatPost,
	"chat.update":           (*Server).chatPost,
	"chat.delete":           (*Server).chatDelete,
	"conversations.info":    (*Server).conversationsInfo,
	"conversations.replies": (*Server).conversationsReplies,
	"users.info":            (*Server).usersInfo,
	"reactions.add":         (*Server).reactionsAdd,
	"views.publish":         (*Server).viewsPublish,
	"views.open":            (*Server).viewsOpen,
	"views.update":          (*Server).viewsUpdate,
	"conversations.history": (*Server).conversationsHistory,
	"pins.list":             (*Server).pinsList,
	"chat.getPermalink":     (*Server).chatGetPermalink,
	"usergroups.users.list": (*Server).usergroupsUsersList,
}

// serveAPI answers /api/<method>.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, strings.TrimPrefix(r.URL.Path, "/api/"), func(s *Server, c *Call) (reply, string) {
		if c.Method == "apps.connections.open" {
			return s.connectionsOpen(c)
		}
		h, ok := botMethods[c.Method]
		switch {
		case !ok:
			return nil, "unknown_method"
		case c.Token == "":
			return nil, "not_authed"
		case !s.tokenOK(c.Token, false):
			return nil, "invalid_auth"
		}
		return h(s, c)
	})
}

// serveResponseURL answers what is posted to a ResponseURL.
func (s *Server) serveResponseURL(w http.ResponseWriter, r *http.Request) {
	s.serve(w, r, "response_url", func(_ *Server, c *Call) (reply, string) {
		if code := readMessage(c); code != "" {
			return nil, code
		}
		c.ResponseType = c.param("response_type")
		c.ReplaceOriginal = c.param("replace_original") == "true"
		c.DeleteOriginal = c.param("delete_original") == "true"
		if msgs := validateBlocks(c.Blocks); len(msgs) > 0 {
			return reply{"response_metadata": reply{"messages": msgs}}, "invalid_blocks"
		}
		return nil, ""
	})
}

// serve reads a request into a Call, works out the answer, records the
// call and only then answers, so a call is in Calls before its client returns.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, method string, h handler) {
	c := Call{Method: method, Time: time.Now(), URL: r.URL.Path}
	status, body := s.answer(w, r, &c, h)
	c.Status = status
	s.record(c)
	if body == nil {
		// Slack answers 5xx with an HTML page, which slack-go does not parse.
		http.Error(w, http.StatusText(status), status)
		return
	}
	writeJSON(w, status, body)
}

// answer applies any injected fault or runs h. It returns the HTTP status
// and the JSON body, nil for a plain error page.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, c *Call, h handler) (int, reply) {
	code := readRequest(r, c)
	if f, ok := s.takeFault(c.Method); ok {
		if f.Delay > 0 {
			t := time.NewTimer(f.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
			case <-s.stop:
			}
			t.Stop()
		}
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(f.RetryAfter.Seconds()))))
		}
		switch {
		case f.Status == http.StatusTooManyRequests:
			c.Error = "ratelimited"
			return f.Status, reply{"ok": false, "error": c.Error}
		case f.Status != 0 && f.Status != http.StatusOK:
			return f.Status, nil
		case f.Error != "":
			code = f.Error
		}
	}
	var body reply
	if code == "" {
		body, code = h(s, c)
	}
	if body == nil {
		body = reply{}
	}
	body["ok"] = code == ""
	if code != "" {
		body["error"] = code
		c.Error = code
	}
	return http.StatusOK, body
}

// readRequest fills the token and the raw parameters of c. Like Slack, it
// takes form-encoded bodies (slack-go's default, with token= in the body)
// and JSON bodies (with a Bearer header). It returns an error code.
func readRequest(r *http.Request, c *Call) string {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		c.Token = tok
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			return "invalid_json"
		}
		if len(bytes.TrimSpace(body)) == 0 {
			return "" // apps.connections.open sends no body
		}
		if err := json.Unmarshal(body, &c.JSON); err != nil {
			return "invalid_json"
		}
		return ""
	}
	if err := r.ParseForm(); err != nil {
		return "invalid_form_data"
	}
	c.Form = r.Form
	if tok := r.Form.Get("token"); tok != "" {
		c.Token = tok
	}
	return ""
}

// param returns a request parameter as text, whether it came in a form or a
// JSON body. JSON objects and arrays come back encoded.
func (c *Call) param(name string) string {
	if c.Form != nil {
		return c.Form.Get(name)
	}
	switch v := c.JSON[name].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// readMessage fills the message fields of c and returns an error code when
// the blocks, attachments or metadata are not valid JSON.
func readMessage(c *Call) string {
	c.Channel = c.param("channel")
	c.TS = c.param("ts")
	c.ThreadTS = c.param("thread_ts")
	c.Text = c.param("text")
	c.UnfurlLinks = c.param("unfurl_links")
	c.UnfurlMedia = c.param("unfurl_media")
	for _, f := range []struct {
		name, code string
		dst        any
	}{
		{"blocks", "invalid_blocks_format", &c.Blocks},
		{"attachments", "invalid_attachments", &c.Attachments},
		{"metadata", "invalid_metadata_format", &c.Metadata},
	} {
		if v := c.param(f.name); v != "" && v != "null" {
			if err := json.Unmarshal([]byte(v), f.dst); err != nil {
				return f.code
			}
		}
	}
	return ""
}

// validateBlocks checks the Block Kit limits Slack enforces and returns
// Slack-style error messages, or nil when the blocks are valid.
func validateBlocks(blocks []map[string]any) []string {
	var msgs []string
	bad := func(pointer, msg string) {
		msgs = append(msgs, fmt.Sprintf("[ERROR] %s [json-pointer:%s]", msg, pointer))
	}
	if len(blocks) > 50 {
		bad("/blocks", "must be less than 51 items")
	}
	for i, b := range blocks {
		at := fmt.Sprintf("/blocks/%d", i)
		if id, _ := b["block_id"].(string); utf8.RuneCountInString(id) > 255 {
			bad(at+"/block_id", "must be less than 256 characters")
		}
		text, _ := b["text"].(map[string]any)
		textLen := utf8.RuneCountInString(fmt.Sprint(text["text"]))
		switch b["type"] {
		case "section":
			fields, _ := b["fields"].([]any)
			if text == nil && len(fields) == 0 {
				bad(at, "must provide either text or fields")
			}
			if text != nil && textLen > 3000 {
				bad(at+"/text", "must be less than 3001 characters")
			}
			if len(fields) > 10 {
				bad(at+"/fields", "must be less than 11 items")
			}
			for j, f := range fields {
				fm, _ := f.(map[string]any)
				if utf8.RuneCountInString(fmt.Sprint(fm["text"])) > 2000 {
					bad(fmt.Sprintf("%s/fields/%d", at, j), "must be less than 2001 characters")
				}
			}
		case "header":
			if text == nil || text["type"] != "plain_text" {
				bad(at+"/text", "must be a plain_text object")
			} else if textLen > 150 {
				bad(at+"/text", "must be less than 151 characters")
			}
		case "context":
			if els, _ := b["elements"].([]any); len(els) > 10 {
				bad(at+"/elements", "must be less than 11 items")
			}
		case "actions":
			if els, _ := b["elements"].([]any); len(els) > 25 {
				bad(at+"/elements", "must be less than 26 items")
			}
		case nil:
			bad(at+"/type", "missing required field: type")
		}
	}
	return msgs
}

func writeJSON(w http.ResponseWriter, status int, body reply) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// connectionsOpen answers apps.connections.open with a single-use ticket.
func (s *Server) connectionsOpen(c *Call) (reply, string) {
	switch {
	case c.Token == "":
		return nil, "not_authed"
	case !s.tokenOK(c.Token, true):
		return nil, "invalid_auth"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.liveLocked())+len(s.tickets) >= s.cfg.maxConns {
		return nil, "too_many_websockets"
	}
	ticket := s.nextIDLocked("ticket-")
	s.tickets[ticket] = true
	u := fmt.Sprintf("ws%s/link/?ticket=%s&app_id=%s", strings.TrimPrefix(s.srv.URL, "http"), ticket, s.cfg.id.AppID)
	return reply{"url": u}, ""
}

func (s *Server) authTest(*Call) (reply, string) {
	id := s.cfg.id
	return reply{
		"url": "https://fake.slack.com/", "team": id.Team, "user": id.User,
		"team_id": id.TeamID, "user_id": id.UserID, "bot_id": id.BotID,
		"is_enterprise_install": false,
	}, ""
}

// chatPost answers chat.postMessage, chat.postEphemeral and chat.update.
func (s *Server) chatPost(c *Call) (reply, string) {
	if code := readMessage(c); code != "" {
		return nil, code
	}
	switch {
	case c.Channel == "":
		return nil, "channel_not_found"
	case c.Text == "" && len(c.Blocks) == 0 && len(c.Attachments) == 0:
		return nil, "no_text"
	}
	if msgs := validateBlocks(c.Blocks); len(msgs) > 0 {
		return reply{"response_metadata": reply{"messages": msgs}}, "invalid_blocks"
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.channels[c.Channel]; ok && ch.outside {
		if ch.private {
			return nil, "channel_not_found"
		}
		return nil, "not_in_channel"
	}
	switch c.Method {
	case "chat.postEphemeral":
		if c.param("user") == "" {
			return nil, "user_not_in_channel"
		}
		c.TS = s.nextTSLocked()
		return reply{"message_ts": c.TS}, ""
	case "chat.update":
		if !s.messages[c.Channel+"/"+c.TS] {
			return nil, "message_not_found"
		}
	default:
		c.TS = s.nextTSLocked()
		s.messages[c.Channel+"/"+c.TS] = true
		if c.ThreadTS != "" {
			key := c.Channel + "/" + c.ThreadTS
			s.threads[key] = append(s.threads[key], c.TS)
		}
	}
	msg := reply{
		"type": "message", "text": c.Text, "ts": c.TS,
		"user": s.cfg.id.UserID, "bot_id": s.cfg.id.BotID, "app_id": s.cfg.id.AppID,
	}
	if c.ThreadTS != "" {
		msg["thread_ts"] = c.ThreadTS
	}
	if c.Blocks != nil {
		msg["blocks"] = c.Blocks
	}
	if c.Attachments != nil {
		msg["attachments"] = c.Attachments
	}
	// The bot's messages join the channel's history (not in a lean fake,
	// whose memory must stay flat); an update keeps the message's thread.
	if !s.cfg.lean {
		m := map[string]any(maps.Clone(msg))
		if old := s.findLocked(c.Channel, c.TS); old != nil && c.Method == "chat.update" {
			m = maps.Clone(old)
			maps.Copy(m, msg)
			if th, ok := old["thread_ts"]; ok {
				m["thread_ts"] = th
			}
			m["edited"] = map[string]any{"user": s.cfg.id.UserID, "ts": s.nextTSLocked()}
		}
		s.putMessageLocked(c.Channel, m)
	}
	return reply{"channel": c.Channel, "ts": c.TS, "text": c.Text, "message": msg}, ""
}

func (s *Server) chatDelete(c *Call) (reply, string) {
	c.Channel, c.TS = c.param("channel"), c.param("ts")
	s.mu.Lock()
	defer s.mu.Unlock()
	key := c.Channel + "/" + c.TS
	if !s.messages[key] {
		return nil, "message_not_found"
	}
	delete(s.messages, key)
	s.deleteMessageLocked(c.Channel, c.TS)
	return reply{"channel": c.Channel, "ts": c.TS}, ""
}

func (s *Server) conversationsInfo(c *Call) (reply, string) {
	c.Channel = c.param("channel")
	s.mu.Lock()
	ch, ok := s.channels[c.Channel]
	s.mu.Unlock()
	if !ok || ch.outside && ch.private {
		return nil, "channel_not_found"
	}
	return reply{"channel": reply{
		"id": c.Channel, "name": ch.name, "is_channel": true, "is_private": ch.private,
		"is_member": !ch.outside, "is_archived": false, "created": 1700000000,
		"topic":   reply{"value": ch.topic, "creator": "U0TOPIC", "last_set": 1700000000},
		"purpose": reply{"value": ch.purpose, "creator": "U0TOPIC", "last_set": 1700000000},
	}}, ""
}

func (s *Server) usersInfo(c *Call) (reply, string) {
	id := c.param("user")
	if id == "" {
		return nil, "user_not_found"
	}
	s.mu.Lock()
	name, ok := s.users[id]
	s.mu.Unlock()
	if !ok {
		name = strings.ToLower(id)
	}
	isBot := id == s.cfg.id.UserID
	if isBot {
		name = s.cfg.id.User
	}
	return reply{"user": reply{
		"id": id, "team_id": s.cfg.id.TeamID, "name": name, "real_name": name, "is_bot": isBot,
		"profile": reply{"real_name": name, "display_name": name},
	}}, ""
}

func (s *Server) reactionsAdd(c *Call) (reply, string) {
	c.Channel, c.TS = c.param("channel"), c.param("timestamp")
	name := c.param("name")
	switch {
	case name == "":
		return nil, "invalid_name"
	case c.Channel == "" || c.TS == "":
		return nil, "no_item_specified"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := c.Channel + "/" + c.TS + "/" + name
	if s.reacted[key] {
		return nil, "already_reacted"
	}
	s.reacted[key] = true
	return nil, ""
}

func (s *Server) viewsPublish(c *Call) (reply, string) {
	view, _ := c.JSON["view"].(map[string]any)
	if c.param("user_id") == "" || view == nil {
		return nil, "invalid_arguments"
	}
	s.mu.Lock()
	id := s.nextIDLocked("V")
	s.mu.Unlock()
	out := maps.Clone(view)
	out["id"], out["team_id"], out["app_id"] = id, s.cfg.id.TeamID, s.cfg.id.AppID
	return reply{"view": out}, ""
}
