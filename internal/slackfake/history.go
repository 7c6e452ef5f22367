package slackfake

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// A channel's history: what the tests seeded with AddMessage and what the
// bot posted, each message as Slack returns it from conversations.history.

// AddMessage puts a message in a channel's history, as if someone had
// posted it, and returns its ts. msg is a message as Slack delivers it
// ("text", "user" or "bot_id", "attachments", "blocks", "reactions",
// "thread_ts" for a reply in a thread, …); "ts" and "type" are filled in
// when missing. Messages sent as events are not in the history: add them
// here too.
func (s *Server) AddMessage(channel string, msg map[string]any) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := maps.Clone(msg)
	ts, _ := m["ts"].(string)
	if ts == "" {
		ts = s.nextTSLocked()
		m["ts"] = ts
	}
	if _, ok := m["type"]; !ok {
		m["type"] = "message"
	}
	s.putMessageLocked(channel, m)
	s.messages[channel+"/"+ts] = true
	s.notifyLocked()
	return ts
}

// Pin pins a message of a channel's history, as pins.add does.
func (s *Server) Pin(channel, ts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.findLocked(channel, ts); m != nil {
		m["pinned_to"] = []any{channel}
	}
	if !slices.Contains(s.pins[channel], ts) {
		s.pins[channel] = append(s.pins[channel], ts)
	}
	s.notifyLocked()
}

// SetChannelTopic sets the topic and purpose conversations.info reports for
// a channel added with AddChannel.
func (s *Server) SetChannelTopic(id, topic, purpose string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[id]
	ch.topic, ch.purpose = topic, purpose
	s.channels[id] = ch
}

// AddUserGroup makes usergroups.users.list know a user group and its members.
func (s *Server) AddUserGroup(id string, users ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[id] = slices.Clone(users)
}

// putMessageLocked inserts or replaces m in the channel's history, kept in
// ts order.
func (s *Server) putMessageLocked(channel string, m map[string]any) {
	ts := m["ts"].(string)
	h := s.history[channel]
	i, found := slices.BinarySearchFunc(h, ts, func(e map[string]any, ts string) int { return compareTS(e["ts"].(string), ts) })
	if found {
		h[i] = m
	} else {
		h = slices.Insert(h, i, m)
	}
	s.history[channel] = h
}

func (s *Server) findLocked(channel, ts string) map[string]any {
	for _, m := range s.history[channel] {
		if m["ts"] == ts {
			return m
		}
	}
	return nil
}

func (s *Server) deleteMessageLocked(channel, ts string) {
	s.history[channel] = slices.DeleteFunc(s.history[channel], func(m map[string]any) bool { return m["ts"] == ts })
}

// compareTS orders message timestamps ("1700000000.000100") by time.
func compareTS(a, b string) int {
	fa, _ := strconv.ParseFloat(a, 64)
	fb, _ := strconv.ParseFloat(b, 64)
	switch {
	case fa < fb:
		return -1
	case fa > fb:
		return 1
	}
	return strings.Compare(a, b)
}

// isReply reports whether m is a reply in a thread (not a thread's parent).
func isReply(m map[string]any) bool {
	th, _ := m["thread_ts"].(string)
	return th != "" && th != m["ts"]
}

// withThread returns m as history shows it: a parent with replies carries
// reply_count, reply_users and latest_reply.
func (s *Server) withThreadLocked(channel string, m map[string]any) map[string]any {
	out := maps.Clone(m)
	n, latest := 0, ""
	var users []any
	for _, r := range s.history[channel] {
		if isReply(r) && r["thread_ts"] == m["ts"] {
			n++
			latest = r["ts"].(string)
			if u, _ := r["user"].(string); u != "" && !slices.Contains(users, any(u)) {
				users = append(users, u)
			}
		}
	}
	if n > 0 {
		out["thread_ts"] = m["ts"]
		out["reply_count"] = n
		out["reply_users_count"] = len(users)
		out["reply_users"] = users
		out["latest_reply"] = latest
	}
	return out
}

// pageOf reads limit and cursor (an offset, as the fake's cursors are).
func pageOf(c *Call, max int) (limit, offset int, code string) {
	limit = 100
	if v := c.param("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, 0, "invalid_limit"
		}
		if n > 0 {
			limit = min(n, max)
		}
	}
	if v := c.param("cursor"); v != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(v, "off:"))
		if err != nil || n < 0 || !strings.HasPrefix(v, "off:") {
			return 0, 0, "invalid_cursor"
		}
		offset = n
	}
	return limit, offset, ""
}

// page cuts a list at offset and limit and returns the next cursor.
func page[T any](all []T, limit, offset int) ([]T, string) {
	if offset > len(all) {
		offset = len(all)
	}
	end := min(len(all), offset+limit)
	next := ""
	if end < len(all) {
		next = fmt.Sprintf("off:%d", end)
	}
	return all[offset:end], next
}

// conversationsHistory answers with a channel's messages, newest first:
// thread parents and messages outside threads (replies are read with
// conversations.replies), within oldest and latest, a page at a time.
func (s *Server) conversationsHistory(c *Call) (reply, string) {
	c.Channel = c.param("channel")
	limit, offset, code := pageOf(c, 999)
	if code != "" {
		return nil, code
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[c.Channel]; !ok && s.history[c.Channel] == nil {
		return nil, "channel_not_found"
	}
	oldest, latest := c.param("oldest"), c.param("latest")
	var all []map[string]any
	h := s.history[c.Channel]
	for i := len(h) - 1; i >= 0; i-- {
		m := h[i]
		ts := m["ts"].(string)
		if isReply(m) && m["subtype"] != "thread_broadcast" {
			continue
		}
		if oldest != "" && compareTS(ts, oldest) <= 0 || latest != "" && compareTS(ts, latest) >= 0 {
			continue
		}
		all = append(all, s.withThreadLocked(c.Channel, m))
	}
	msgs, next := page(all, limit, offset)
	return reply{"messages": msgs, "has_more": next != "", "pin_count": len(s.pins[c.Channel]),
		"response_metadata": reply{"next_cursor": next}}, ""
}

// conversationsReplies answers with a thread: its parent, then its replies
// (seeded and posted by the bot), oldest first, a page at a time. A parent
// the fake never saw is answered as a bare message, so the replies the bot
// posted under an event's ts can still be read.
func (s *Server) conversationsReplies(c *Call) (reply, string) {
	c.Channel = c.param("channel")
	ts := c.param("ts")
	if c.Channel == "" || ts == "" {
		return nil, "invalid_arguments"
	}
	limit, offset, code := pageOf(c, 1000)
	if code != "" {
		return nil, code
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	parent := s.findLocked(c.Channel, ts)
	if parent == nil {
		parent = map[string]any{"type": "message", "ts": ts}
	}
	if isReply(parent) {
		// Slack answers a reply's ts with the reply alone.
		return reply{"messages": []map[string]any{parent}, "has_more": false}, ""
	}
	all := []map[string]any{s.withThreadLocked(c.Channel, parent)}
	all[0]["thread_ts"] = ts
	for _, r := range s.history[c.Channel] {
		if isReply(r) && r["thread_ts"] == ts {
			all = append(all, r)
		}
	}
	msgs, next := page(all, limit, offset)
	return reply{"messages": msgs, "has_more": next != "", "response_metadata": reply{"next_cursor": next}}, ""
}

// pinsList answers with a channel's pinned messages, newest pin first.
func (s *Server) pinsList(c *Call) (reply, string) {
	c.Channel = c.param("channel")
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[c.Channel]; !ok && s.history[c.Channel] == nil {
		return nil, "channel_not_found"
	}
	items := []reply{}
	pins := s.pins[c.Channel]
	for i := len(pins) - 1; i >= 0; i-- {
		m := s.findLocked(c.Channel, pins[i])
		if m == nil {
			continue
		}
		items = append(items, reply{"type": "message", "channel": c.Channel, "created": 1700000000, "created_by": "U0PINNER", "message": m})
	}
	return reply{"items": items, "paging": reply{"count": 100, "total": len(items), "page": 1, "pages": 1}}, ""
}

// chatGetPermalink answers with a message's permalink, shaped as Slack's.
func (s *Server) chatGetPermalink(c *Call) (reply, string) {
	c.Channel, c.TS = c.param("channel"), c.param("message_ts")
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.findLocked(c.Channel, c.TS)
	if m == nil {
		return nil, "message_not_found"
	}
	link := fmt.Sprintf("https://fake.slack.com/archives/%s/p%s", c.Channel, strings.ReplaceAll(c.TS, ".", ""))
	if isReply(m) {
		link += fmt.Sprintf("?thread_ts=%s&cid=%s", m["thread_ts"], c.Channel)
	}
	return reply{"channel": c.Channel, "permalink": link}, ""
}

// usergroupsUsersList answers with a user group's members.
func (s *Server) usergroupsUsersList(c *Call) (reply, string) {
	id := c.param("usergroup")
	s.mu.Lock()
	defer s.mu.Unlock()
	users, ok := s.groups[id]
	if !ok {
		return nil, "no_such_subteam"
	}
	return reply{"users": slices.Clone(users)}, ""
}
