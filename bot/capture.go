package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/postmortem"
	"github.com/incidentbot/incidentbot/store"
)

// CaptureID is the callback id of the "Save as incident case" message
// shortcut in the app manifest.
const CaptureID = "capture_case"

// Inferrer labels a text with the taxonomy's tags; *matcher.Matcher
// implements it. A searcher that is not one gives drafts without tags.
type Inferrer interface {
	Infer(text string) matcher.Inference
}

// TeamCases keeps the cases a team captured in Slack; the activity store
// implements it.
type TeamCases interface {
	PutTeamCase(ctx context.Context, c store.TeamCase) (store.TeamCase, error)
	TeamCase(ctx context.Context, id string) (store.TeamCase, bool, error)
	DeleteTeamCase(ctx context.Context, id string) (bool, error)
}

// TeamCasePrefix starts the id of every team case.
const TeamCasePrefix = "team-"

// Limits on what a capture reads from Slack.
const (
	maxHistory     = 1000 // messages of the channel
	historyPage    = 200
	maxThreads     = 20 // threads whose replies are read
	maxPermalinks  = 24 // quoted messages linked
	captureTimeout = 60 * time.Second
)

// checkReactions mark a message as the fix.
var checkReactions = []string{"white_check_mark", "heavy_check_mark", "ballot_box_with_check", "check", "done", "fixed"}

// chatMessage is a message read from the history, with what the draft
// needs to know about it.
type chatMessage struct {
	ts      string
	msg     postmortem.ChatMessage
	thread  string
	private bool
}

// channelHistory is what a capture read from a channel.
type channelHistory struct {
	name, topic, purpose string
	private              bool
	messages             []chatMessage
}

// readHistory reads a channel's history for a capture: its name, topic and
// privacy, its messages and the replies of its busiest threads, and which
// messages are pinned. The bot's own messages and channel notices are left
// out.
func (b *Bot) readHistory(ctx context.Context, channel string) (*channelHistory, error) {
	h := &channelHistory{}
	var info *slack.Channel
	err := b.post.call(ctx, "conversations.info", channel, false, func(ctx context.Context) error {
		var err error
		info, err = b.api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: channel})
		return err
	})
	if err != nil {
		return nil, err
	}
	h.name, h.topic, h.purpose = info.Name, info.Topic.Value, info.Purpose.Value
	h.private = info.IsPrivate || info.IsIM || info.IsMpIM

	// Slack may allow an app only a few history reads a minute: the first
	// page is waited for when rate limited, later pages and threads are
	// not, and the draft is made of what was read.
	var msgs []slack.Message
	cursor := ""
	for len(msgs) < maxHistory {
		var res *slack.GetConversationHistoryResponse
		read := func(ctx context.Context) error {
			var err error
			res, err = b.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: channel, Limit: historyPage, Cursor: cursor})
			return err
		}
		var err error
		if cursor == "" {
			err = b.post.call(ctx, "conversations.history", channel, false, read)
		} else {
			err = read(ctx)
		}
		if err != nil && cursor != "" {
			b.log.Warn("capture: reading more of the history failed; drafting from what was read", "channel", channel, "messages", len(msgs), "err", err)
			break
		}
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, res.Messages...)
		if !res.HasMore || res.ResponseMetaData.NextCursor == "" {
			break
		}
		cursor = res.ResponseMetaData.NextCursor
	}
	// The threads with most replies first, each read once.
	parents := slices.Clone(msgs)
	slices.SortStableFunc(parents, func(a, b slack.Message) int { return b.ReplyCount - a.ReplyCount })
	threads := 0
	for _, p := range parents {
		if p.ReplyCount == 0 || threads >= maxThreads {
			break
		}
		threads++
		replies, _, _, err := b.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: p.Timestamp, Limit: historyPage})
		var rl *slack.RateLimitedError
		if errors.As(err, &rl) {
			b.log.Warn("capture: Slack rate limited reading threads; drafting without the rest", "channel", channel, "threads_read", threads-1)
			break
		}
		if err != nil {
			b.log.Warn("capture: reading a thread failed; the draft goes without it", "channel", channel, "err", err)
			continue
		}
		for _, r := range replies {
			if r.Timestamp != p.Timestamp {
				msgs = append(msgs, r)
			}
		}
	}
	pinned := map[string]bool{}
	var items []slack.Item
	if err := b.post.call(ctx, "pins.list", channel, false, func(ctx context.Context) error {
		var err error
		items, _, err = b.api.ListPinsContext(ctx, channel)
		return err
	}); err != nil {
		b.log.Debug("capture: pins.list failed; reading pins from the history only", "channel", channel, "err", err)
	}
	for _, it := range items {
		if it.Message != nil {
			pinned[it.Message.Timestamp] = true
		}
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		if seen[m.Timestamp] || m.Hidden || !handledSubtypes[m.SubType] {
			continue
		}
		seen[m.Timestamp] = true
		raw, err := json.Marshal(m.Msg)
		if err != nil {
			continue
		}
		var mm message
		if json.Unmarshal(raw, &mm) != nil || b.isSelf(&mm) {
			continue
		}
		marked := pinned[m.Timestamp] || len(m.PinnedTo) > 0
		for _, r := range m.Reactions {
			name, _, _ := strings.Cut(r.Name, "::") // skin tones
			if slices.Contains(checkReactions, name) {
				marked = true
			}
		}
		thread := m.ThreadTimestamp
		h.messages = append(h.messages, chatMessage{ts: m.Timestamp, thread: thread, msg: postmortem.ChatMessage{
			At: tsTime(m.Timestamp), Author: m.User + m.BotID, Bot: m.BotID != "" || m.SubType == "bot_message",
			Text: mm.fullText(), Marked: marked, Reply: thread != "" && thread != m.Timestamp,
		}})
	}
	return h, nil
}

// tsTime reads a Slack ts ("1700000000.000100") as a time.
func tsTime(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}
	}
	us, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return time.Unix(s, us*1000).UTC()
}

// capture is a case draft ready for the modal.
type capture struct {
	channel, thread string // where to confirm the save
	channelName     string
	channelPrivate  bool   // the channel is private: the modal offers to share the case
	private         bool   // the case is suggested only in its channel
	id              string // the team case being edited; "" for a new one
	lang            cases.Lang
	c               *cases.Case
	timeline        []postmortem.ChatEvent
	messages        int
}

// buildDraft reads a channel and drafts a case from it, with the tags the
// matcher infers and links to the messages it quotes.
func (b *Bot) buildDraft(ctx context.Context, channel, thread string) (*capture, error) {
	h, err := b.readHistory(ctx, channel)
	if err != nil {
		return nil, err
	}
	chat := postmortem.Chat{Channel: h.name, Topic: h.topic, Purpose: h.purpose}
	byText := map[string]string{} // a message's text -> its ts, to link what the draft quotes
	for _, m := range h.messages {
		chat.Messages = append(chat.Messages, m.msg)
	}
	d := postmortem.FromChat(chat)
	c := d.Case
	if inf, ok := b.searcher().(Inferrer); ok && strings.TrimSpace(d.Text) != "" {
		labelCapture(c, inf.Infer(d.Text))
	}
	c.Org = b.team
	if c.Org == "" {
		c.Org = "team"
	}
	// Link the quoted messages: a step's text is the message's text, on one
	// line and perhaps clipped.
	for _, m := range h.messages {
		byText[flatten(m.msg.Text)] = m.ts
	}
	tsOf := func(quoted string) string {
		quoted = strings.TrimSuffix(quoted, "…")
		if ts, ok := byText[quoted]; ok {
			return ts
		}
		for text, ts := range byText {
			if strings.HasPrefix(text, quoted) || strings.Contains(text, quoted) {
				return ts
			}
		}
		return ""
	}
	links := 0
	link := func(ts string) string {
		if ts == "" || links >= maxPermalinks {
			return ""
		}
		links++
		var u string
		err := b.post.call(ctx, "chat.getPermalink", channel, false, func(ctx context.Context) error {
			var err error
			u, err = b.api.GetPermalinkContext(ctx, &slack.PermalinkParameters{Channel: channel, Ts: ts})
			return err
		})
		if err != nil {
			b.log.Debug("capture: no permalink", "channel", channel, "err", err)
			return ""
		}
		return u
	}
	for _, list := range [][]cases.Step{c.Remediation, c.ActionItems} {
		for i := range list {
			list[i].Source = link(tsOf(list[i].Text.In(d.Lang)))
		}
	}
	firstTS := ""
	for i, e := range d.Timeline {
		ts := ""
		for _, m := range h.messages {
			if m.msg.At.Equal(e.At) && strings.HasPrefix(flatten(m.msg.Text), strings.TrimSuffix(e.Text, "…")) {
				ts = m.ts
				break
			}
		}
		if i == 0 {
			firstTS = ts
		}
		d.Timeline[i].Link = link(ts)
	}
	if thread == "" {
		thread = firstTS
	}
	if u := d.Timeline; len(u) > 0 && u[0].Link != "" {
		c.Sources = []cases.Source{{URL: u[0].Link}}
	}
	return &capture{channel: channel, thread: thread, channelName: h.name, channelPrivate: h.private, private: h.private, lang: d.Lang, c: c, timeline: d.Timeline, messages: len(h.messages)}, nil
}

// Tags a capture proposes, at most.
const (
	maxCaptureSymptoms     = 4
	maxCaptureComponents   = 3
	maxCaptureContributing = 3
)

// labelCapture gives a draft the tags inferred from its text.
func labelCapture(c *cases.Case, inf matcher.Inference) {
	take := func(tags []matcher.Inferred, n int) []string {
		var ids []string
		for _, t := range tags {
			if len(ids) < n && !slices.Contains(ids, t.ID) {
				ids = append(ids, t.ID)
			}
		}
		return ids
	}
	c.Symptoms = take(inf.Symptoms, maxCaptureSymptoms)
	c.Components = take(inf.Components, maxCaptureComponents)
	if len(inf.RootCauses) > 0 {
		c.RootCause = inf.RootCauses[0].ID
	}
	c.Contributing = take(inf.Contributing, maxCaptureContributing)
}

// newCaseID makes an id for a captured case from its channel and date,
// one no other case has.
func (b *Bot) newCaseID(ctx context.Context, channelName, date string) (string, error) {
	base := TeamCasePrefix + postmortem.SafeID(strings.TrimSpace(channelName+" "+date))
	if len(base) > 100 {
		base = base[:100]
	}
	for n := 1; n < 100; n++ {
		id := base
		if n > 1 {
			id = fmt.Sprintf("%s-%d", base, n)
		}
		if _, ok := b.searcher().CaseIn(id, ""); ok {
			continue
		}
		_, ok, err := b.opts.TeamCases.TeamCase(ctx, id)
		if err != nil {
			return "", err
		}
		if !ok {
			return id, nil
		}
	}
	return "", errors.New("no free case id")
}

// scopeCache remembers where team cases may be suggested, so that a
// private channel's case is never suggested elsewhere, without a store
// read per reply.
type scopeCache struct {
	mu sync.Mutex
	m  map[string]caseScope
}

type caseScope struct {
	channel string
	private bool
	gone    bool
	at      time.Time
}

// scopeTTL is how long a team case's scope is trusted before it is read
// again (another replica may have changed it).
const scopeTTL = 30 * time.Second

func (s *scopeCache) set(id string, sc caseScope) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) > 10000 {
		s.m = map[string]caseScope{}
	}
	sc.at = time.Now()
	s.m[id] = sc
}

func (s *scopeCache) get(id string) (caseScope, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.m[id]
	if !ok || time.Since(sc.at) > scopeTTL {
		return caseScope{}, false
	}
	return sc, true
}

// visibleIn reports whether a case may be shown in channel: every case
// may, but a team case captured in a private channel and not shared only
// there. When the store cannot tell, a team case is not shown.
func (b *Bot) visibleIn(ctx context.Context, channel, id string) bool {
	if b.opts.TeamCases == nil || !strings.HasPrefix(id, TeamCasePrefix) {
		return true
	}
	sc, ok := b.scopes.get(id)
	if !ok {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		tc, found, err := b.opts.TeamCases.TeamCase(ctx, id)
		if err != nil {
			b.log.Warn("cannot tell where a team case may be shown; leaving it out", "case_id", id, "err", err)
			return false
		}
		sc = caseScope{channel: tc.Channel, private: tc.Private, gone: !found}
		b.scopes.set(id, sc)
	}
	return sc.gone || !sc.private || sc.channel == channel
}

// visible keeps the results that may be shown in channel, at most top.
func (b *Bot) visible(ctx context.Context, channel string, ans *matcher.Answer, top int) *matcher.Answer {
	if ans == nil {
		return ans
	}
	out := *ans
	out.Results = nil
	for _, r := range ans.Results {
		if len(out.Results) < top && b.visibleIn(ctx, channel, r.Case.ID) {
			out.Results = append(out.Results, r)
		}
	}
	return &out
}

// flatten puts text on one line.
func flatten(s string) string { return strings.Join(strings.Fields(s), " ") }
