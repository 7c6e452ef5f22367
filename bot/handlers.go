package bot

import (
	"context"
	"encoding/json"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/store"
)

// callback is the Events API envelope payload, read from the raw JSON.
type callback struct {
	EventID string          `json:"event_id"`
	Event   json.RawMessage `json:"event"`
}

// onEventsAPI takes an Events API envelope: it records the event in the
// inbox (when there is one) before acking it, acks, and queues the work.
// An event the inbox has seen before is a redelivery: acked and dropped.
func (b *Bot) onEventsAPI(ctx context.Context, req *socketmode.Request) {
	var cb callback
	if err := json.Unmarshal(req.Payload, &cb); err != nil {
		b.ack(ctx, req, nil)
		b.log.Warn("events api payload is not JSON", "envelope_id", req.EnvelopeID, "err", err)
		return
	}
	// The inbox keeps what handling the event again needs, and nothing of
	// a message the bot will not answer.
	key, record := cb.EventID, req.Payload
	var m message
	if err := json.Unmarshal(cb.Event, &m); err == nil {
		if b.unanswered(&m) {
			key = ""
		}
		if ev, err := json.Marshal(m); err == nil {
			record, _ = json.Marshal(callback{EventID: cb.EventID, Event: ev})
		}
	}
	b.recordThenAck(ctx, req, key, kindEvent, record, func(fresh bool) {
		if req.RetryAttempt > 0 {
			b.log.Info("slack redelivered an event", "event_id", cb.EventID, "retry_attempt", req.RetryAttempt, "retry_reason", req.RetryReason)
		}
		if !fresh {
			b.m.suppressed.WithLabelValues("redelivery").Inc()
			return
		}
		b.queueEvent(cb, false)
	})
}

// pendingAck is an envelope whose inbox record is being written: once it
// is, the envelope is acked and then is called.
type pendingAck struct {
	req  *socketmode.Request
	at   time.Time // when the envelope was taken
	put  chan bool // the inbox's answer: whether the event is new
	then func(fresh bool)
}

// maxPendingAcks bounds the envelopes whose inbox records are being written
// at once.
const maxPendingAcks = 256

// recordThenAck records an envelope's event (record, under key; nothing
// when key is empty) in the inbox, then acks it and
// calls then with whether the event is new. The record is written in the
// background, beside those of the envelopes before and after it, so that a
// slow database costs each ack at most InboxTimeout instead of delaying
// every later ack by its own; acks and the work still go in the order the
// envelopes came (ackInOrder).
func (b *Bot) recordThenAck(ctx context.Context, req *socketmode.Request, key, kind string, record []byte, then func(fresh bool)) {
	p := &pendingAck{req: req, at: time.Now(), put: make(chan bool, 1), then: then}
	go func() { p.put <- b.inboxPut(ctx, key, kind, record) }()
	b.pending <- p
}

// ackInOrder acks the envelopes recordThenAck was given, in order, each once
// its record is written (or InboxTimeout passed), until pending is closed.
func (b *Bot) ackInOrder(ctx context.Context) {
	ctx = context.WithoutCancel(ctx) // what was recorded is acked, even while stopping
	for p := range b.pending {
		fresh := <-p.put
		b.ack(ctx, p.req, nil)
		b.m.ackTime.Observe(time.Since(p.at).Seconds())
		p.then(fresh)
	}
}

// queueEvent queues the work for an event. orphan is set for an event taken
// over from a replica that stopped before handling it: the inbox already
// made it exclusive, so no dedupe claim may stop it.
func (b *Bot) queueEvent(cb callback, orphan bool) {
	var m message
	if err := json.Unmarshal(cb.Event, &m); err != nil {
		b.log.Warn("events api event is not a message", "event_id", cb.EventID, "err", err)
		b.inboxDone(cb.EventID)
		return
	}
	thread := m.ThreadTS
	if thread == "" {
		thread = m.TS
	}
	if m.Subtype == "message_changed" && m.Message != nil {
		thread = m.Message.ThreadTS
		if thread == "" {
			thread = m.Message.TS
		}
	}
	first := func(ctx context.Context) bool {
		return orphan || b.opts.Inbox != nil || b.firstTime(ctx, "event:"+cb.EventID, cb.EventID, b.opts.DedupeTTL)
	}
	j := job{shard: m.Channel + ":" + thread, inbox: cb.EventID}
	var handle func(ctx context.Context)
	switch m.Type {
	case "message":
		if m.Subtype == "" && m.ThreadTS == "" {
			// The same alert posted again repeats work already queued.
			j.dup = m.Channel + ":" + alertFingerprint(m.fullText())
		}
		handle = func(ctx context.Context) { b.onMessage(ctx, &m, orphan) }
	case "app_mention":
		handle = func(ctx context.Context) { b.onMention(ctx, &m, orphan) }
	case "app_home_opened":
		j = job{shard: "home:" + m.User, dup: "home:" + m.User, inbox: cb.EventID}
		handle = func(ctx context.Context) { b.onHomeOpened(ctx, m.User) }
	default:
		b.inboxDone(cb.EventID)
		return
	}
	j.run = func(ctx context.Context) {
		// Done even when the handler panics: a poison event must not be
		// taken over again and again.
		defer b.inboxDone(cb.EventID)
		if first(ctx) {
			handle(ctx)
		}
	}
	b.q.push(j)
}

// inboxBackoff is how long the bot stops recording events after the inbox
// failed.
const inboxBackoff = 10 * time.Second

// inboxPut records an event before its ack and reports whether it is new.
// Without an inbox, or when it fails, the event counts as new: a rare
// duplicate beats a lost answer.
func (b *Bot) inboxPut(ctx context.Context, id, kind string, payload []byte) bool {
	if b.opts.Inbox == nil || id == "" {
		return true
	}
	// After a failure the inbox is left alone for a while, so that a lost
	// database does not cost every ack its timeout.
	if time.Now().UnixNano() < b.inboxDownUntil.Load() {
		return true
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.opts.InboxTimeout)
	defer cancel()
	fresh, err := b.opts.Inbox.Put(ctx, id, kind, payload)
	if err != nil {
		b.m.inboxErrors.Inc()
		b.inboxDownUntil.Store(time.Now().Add(inboxBackoff).UnixNano())
		b.log.Warn("inbox unavailable; handling events without it for a while", "event_id", id, "retry_in", inboxBackoff, "err", err)
		return true
	}
	return fresh
}

func (b *Bot) inboxDone(id string) {
	if b.opts.Inbox == nil || id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.InboxTimeout*10)
	defer cancel()
	if err := b.opts.Inbox.Done(ctx, id); err != nil {
		b.m.inboxErrors.Inc()
		b.log.Warn("marking an event handled failed; another replica may handle it again", "event_id", id, "err", err)
	}
}

// maxDroppedKeys bounds the dropped events waiting to be marked done.
const maxDroppedKeys = 10000

// dropped is called for each job the queue drops. A job dropped from a full
// lane will never run: its event is marked done in the background, or its
// lease would be renewed for as long as this replica lives and a replica
// that later took it over would answer an old alert late. A job pushed
// after close is left alone: another replica takes it over.
func (b *Bot) dropped(j job, full bool) {
	b.m.dropped.Inc()
	if !full || j.inbox == "" || b.opts.Inbox == nil {
		return
	}
	b.dropMu.Lock()
	if len(b.dropKeys) >= maxDroppedKeys {
		b.dropMu.Unlock()
		b.log.Warn("too many dropped events waiting to be marked handled; another replica may handle this one late", "event_id", j.inbox)
		return
	}
	b.dropKeys = append(b.dropKeys, j.inbox)
	b.dropMu.Unlock()
	select {
	case b.dropWake <- struct{}{}:
	default:
	}
}

// markDropped marks the events of dropped jobs done until ctx ends, and
// then those still waiting.
func (b *Bot) markDropped(ctx context.Context) {
	for {
		b.dropMu.Lock()
		keys := b.dropKeys
		b.dropKeys = nil
		b.dropMu.Unlock()
		for _, k := range keys {
			b.inboxDone(k)
		}
		if len(keys) > 0 {
			b.log.Info("queue full: events dropped and marked handled", "events", len(keys))
		}
		select {
		case <-ctx.Done():
			if len(keys) == 0 {
				return
			}
		case <-b.dropWake:
		}
	}
}

// sweepOrphans takes over, every period until ctx ends, the events that
// another replica (or this one before a restart) recorded and acked but
// never handled.
func (b *Bot) sweepOrphans(ctx context.Context) {
	if b.opts.Inbox == nil {
		return
	}
	t := time.NewTicker(b.opts.OrphanEvery)
	defer t.Stop()
	for {
		if err := b.opts.Inbox.Renew(ctx); err != nil && ctx.Err() == nil {
			b.m.inboxErrors.Inc()
			b.log.Warn("renewing this replica's events failed; another replica may take them over", "err", err)
		}
		items, err := b.opts.Inbox.Orphans(ctx, 100)
		if err != nil && ctx.Err() == nil {
			b.log.Warn("looking for orphaned events failed", "err", err)
		}
		for _, it := range items {
			b.m.orphans.Inc()
			b.log.Info("taking over an event a stopped replica never handled", "event_id", it.Key, "kind", it.Kind)
			switch it.Kind {
			case kindInteractive:
				var in interaction
				if json.Unmarshal(it.Payload, &in) != nil {
					b.inboxDone(it.Key)
					continue
				}
				b.queueInteraction(&in, it.Key, true)
			default:
				var cb callback
				if json.Unmarshal(it.Payload, &cb) != nil {
					b.inboxDone(it.Key)
					continue
				}
				b.queueEvent(cb, true)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// firstTime claims key and reports whether this is its first handling. An
// empty id is never a duplicate. When the shared state fails, the event is
// handled: a rare duplicate beats a lost answer.
func (b *Bot) firstTime(ctx context.Context, key, id string, ttl time.Duration) bool {
	if id == "" {
		return true
	}
	ok, err := b.opts.State.Claim(ctx, key, ttl)
	if err != nil {
		b.log.Warn("dedupe state unavailable; handling the event", "key", key, "err", err)
		return true
	}
	if !ok {
		b.m.suppressed.WithLabelValues("redelivery").Inc()
	}
	return ok
}

// handledSubtypes are the message subtypes that carry text worth matching.
var handledSubtypes = map[string]bool{"": true, "bot_message": true, "thread_broadcast": true, "file_share": true}

func (b *Bot) onMessage(ctx context.Context, m *message, orphan bool) {
	if m.Subtype == "message_changed" {
		b.onEdit(ctx, m)
		return
	}
	if !handledSubtypes[m.Subtype] || m.Hidden || b.isSelf(m) {
		return
	}
	if b.userID != "" && strings.Contains(m.Text, "<@"+b.userID+">") {
		return // the app_mention event answers it
	}
	incident, private := b.channels.check(ctx, m.Channel, m.ChannelType)
	text := m.fullText()
	thread, isRoot := m.ThreadTS, m.ThreadTS == "" || m.ThreadTS == m.TS
	if thread == "" {
		thread = m.TS
	}
	if !incident {
		// Remember where threads start, so that a mention in one can be
		// answered for its first message.
		if isRoot && strings.TrimSpace(text) != "" {
			b.threads.addChatter(m.Channel, thread, text, private)
		}
		return
	}
	if !orphan && !b.firstTime(ctx, "msg:"+m.Channel+":"+m.TS, m.TS, b.opts.ClaimTTL) {
		return
	}
	if strings.TrimSpace(text) == "" {
		return
	}
	all := b.threads.add(m.Channel, thread, isRoot, text, private)
	source, alertKey := store.SourcePerson, ""
	if m.BotID != "" || m.Subtype == "bot_message" {
		source = store.SourceAlert
		if fp := alertFingerprint(text); isRoot && fp != "" {
			alertKey = "alert:" + m.Channel + ":" + fp
		}
	}
	matchText := text
	if !isRoot {
		matchText = all
	}
	b.answerThread(ctx, answer{channel: m.Channel, thread: thread, private: private, text: matchText,
		source: source, key: "msg:" + m.Channel + ":" + m.TS, alertKey: alertKey, orphan: orphan})
}

// onEdit refreshes the reply to a message that was edited, as alert tools do
// when an alert changes, only when the best matches changed.
func (b *Bot) onEdit(ctx context.Context, m *message) {
	edited := m.Message
	if edited == nil || b.isSelf(edited) {
		return
	}
	edited.Channel = m.Channel
	incident, private := b.channels.check(ctx, m.Channel, m.ChannelType)
	if !incident {
		return
	}
	text := edited.fullText()
	if strings.TrimSpace(text) == "" {
		return
	}
	if prev := m.Previous; prev != nil && prev.fullText() == text {
		return // an unfurl or a reaction changed the message, not its text
	}
	thread := edited.ThreadTS
	if thread == "" {
		thread = edited.TS
	}
	source := store.SourcePerson
	if edited.BotID != "" || edited.Subtype == "bot_message" {
		source = store.SourceAlert
	}
	b.answerThread(ctx, answer{channel: m.Channel, thread: thread, private: private, text: text,
		source: source, key: "edit:" + m.Channel + ":" + edited.TS + ":" + m.TS})
}

func (b *Bot) onMention(ctx context.Context, m *message, orphan bool) {
	if b.isSelf(m) {
		return
	}
	if !orphan && !b.firstTime(ctx, "msg:"+m.Channel+":"+m.TS, m.TS, b.opts.ClaimTTL) {
		return
	}
	_, private := b.channels.check(ctx, m.Channel, m.ChannelType)
	thread := m.ThreadTS
	if thread == "" {
		thread = m.TS
	}
	text := stripMentions(m.fullText())
	if text == "" {
		th, ok := b.threads.get(m.Channel, thread)
		if !ok || strings.TrimSpace(th.root) == "" {
			lang := b.opts.DefaultLang
			blocks, fallback := renderText(say(lang, "no_thread"))
			if _, err := b.post.post(ctx, m.Channel, thread, blocks, fallback); err != nil {
				b.log.Warn("reply to mention failed", "channel", m.Channel, "err", err)
			}
			return
		}
		text = th.root
	} else {
		b.threads.add(m.Channel, thread, m.ThreadTS == "", text, private)
	}
	b.answerThread(ctx, answer{channel: m.Channel, thread: thread, private: private, text: text,
		source: store.SourceMention, key: "msg:" + m.Channel + ":" + m.TS, mention: true, user: m.User})
}

// answer is a request to answer a thread.
type answer struct {
	channel, thread string
	private         bool
	text            string
	source          store.Source
	key             string
	alertKey        string // an alert's fingerprint: the same alert again gets no new reply
	orphan          bool   // taken over from a stopped replica, which may have claimed its alert key
	mention         bool   // someone asked: say so when nothing matched
	user            string // who asked, for a mention
}

// match runs the searcher for text seen in channel, with the votes cast
// on similar texts, timing it; team cases that may not be shown there are
// left out.
func (b *Bot) match(ctx context.Context, channel, text string, top int) (*matcher.Answer, error) {
	start := time.Now()
	want := top
	if b.opts.TeamCases != nil {
		want = top + hiddenSlack
	}
	boosts := b.votes.boosts(channel, text, start.Add(-b.opts.VoteWindow))
	ans, err := b.searcher().MatchWith(ctx, text, want, matcher.MatchOptions{Boosts: boosts, Channel: channel})
	b.m.matchTime.Observe(time.Since(start).Seconds())
	if err != nil {
		return ans, err
	}
	return b.visible(ctx, channel, ans, top), nil
}

// hiddenSlack is how many more cases are asked for than are shown, so that
// leaving out private team cases still leaves enough to show.
const hiddenSlack = 5

// answerThread matches a thread's text and keeps one reply per thread:
// it posts the first reply, and later updates it only when the best
// matches change. It returns the error of a post Slack refused.
func (b *Bot) answerThread(ctx context.Context, a answer) error {
	ans, err := b.match(ctx, a.channel, a.text, b.opts.Top)
	if err != nil {
		b.log.Error("match failed", "channel", a.channel, "err", err)
		return nil
	}
	lang := b.langOf(a.text, ans.Lang)
	existing, st, err := b.replies.look(ctx, a.channel, a.thread, a.orphan)
	if err != nil {
		b.log.Warn("reply state unavailable", "channel", a.channel, "err", err)
	}
	if len(ans.Results) == 0 {
		if a.mention && st == threadOpen {
			blocks, fallback := renderText(say(lang, "none"))
			if _, err := b.post.post(ctx, a.channel, a.thread, blocks, fallback); err != nil {
				b.log.Warn("reply failed", "channel", a.channel, "err", err)
				return err
			}
		}
		return nil
	}
	ids := caseIDs(ans.Results)
	blocks, fallback := renderReply(ans.Results, lang, replyOptions{feedback: true, showMore: true, library: b.opts.PublicURL})
	switch st {
	case threadBusy:
		b.m.suppressed.WithLabelValues("thread_claimed").Inc()
		return nil
	case threadAnswered:
		if slices.Equal(ids, existing.CaseIDs) {
			b.m.suppressed.WithLabelValues("same_matches").Inc()
			if a.mention && a.user != "" {
				// Asked again: show the asker the same answer, privately.
				eb, ef := renderReply(ans.Results, lang, replyOptions{library: b.opts.PublicURL})
				_ = b.post.ephemeral(ctx, a.channel, a.user, a.thread, eb, ef)
			}
			return nil
		}
		if err := b.post.update(ctx, a.channel, existing.ReplyTS, blocks, fallback); err != nil {
			b.log.Warn("update of reply failed", "channel", a.channel, "err", err)
			return err
		}
		existing.CaseIDs, existing.Lang, existing.Text = ids, string(lang), replyText(a.text)
		b.replies.put(ctx, existing)
		b.m.updated.Inc()
		b.record(a, ans, lang)
		return nil
	}
	if a.alertKey != "" && !a.orphan {
		// Only an alert that is answered counts: the same alert firing
		// again within the window gets no new reply.
		ok, err := b.opts.State.Claim(ctx, a.alertKey, b.opts.AlertRepeat)
		if err == nil && !ok {
			b.m.suppressed.WithLabelValues("alert_repeat").Inc()
			b.log.Debug("same alert again; not answering", "channel", a.channel)
			return nil
		}
	}
	// Wait for the channel's turn first, so the claim is held only while
	// posting: a claim that outlived a long wait could expire under another
	// replica's feet.
	if err := b.post.wait(ctx, a.channel); err != nil {
		return nil
	}
	reply := store.Reply{Channel: a.channel, Thread: a.thread, Lang: string(lang), CaseIDs: ids, Text: replyText(a.text)}
	sent, err := b.replies.post(ctx, reply, st == threadTakeover, func(ctx context.Context) (string, error) {
		return b.post.postNow(ctx, a.channel, a.thread, blocks, fallback)
	})
	switch {
	case !sent:
		b.m.suppressed.WithLabelValues("thread_claimed").Inc()
	case err != nil:
		b.log.Warn("reply failed", "channel", a.channel, "err", err)
		return err
	default:
		b.m.posted.Inc()
		b.record(a, ans, lang)
	}
	return nil
}

// replyText is the part of a thread's text a reply keeps: as much as the
// thread keeps in memory, from its start, where the alert is.
func replyText(text string) string {
	return strings.Clone(cutBytes(text, maxThreadText))
}

// ownReply asks Slack for the bot's reply in a thread, for the rare case
// where a replica stopped between posting it and saving where it is.
func (b *Bot) ownReply(ctx context.Context, channel, thread string) string {
	var msgs []slack.Message
	err := b.post.call(ctx, "conversations.replies", channel, false, func(ctx context.Context) error {
		var err error
		msgs, _, _, err = b.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: thread, Limit: 100})
		return err
	})
	if err != nil {
		b.log.Warn("could not check the thread for an earlier reply; posting", "channel", channel, "err", err)
		return ""
	}
	for _, m := range msgs {
		if m.Timestamp != thread && (m.BotID != "" && m.BotID == b.botID || m.User != "" && m.User == b.userID) {
			return m.Timestamp
		}
	}
	return ""
}

func caseIDs(rs []matcher.Result) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.Case.ID
	}
	return ids
}

// record hands a suggestion to the recorder.
func (b *Bot) record(a answer, ans *matcher.Answer, lang cases.Lang) {
	if b.opts.Recorder == nil {
		return
	}
	s := store.Suggestion{Key: a.key, Time: time.Now().UTC(), Channel: a.channel, Private: a.private, Thread: a.thread,
		Source: a.source, Lang: string(lang)}
	for _, sig := range ans.Symptoms {
		s.Symptoms = append(s.Symptoms, sig.ID)
	}
	for _, sig := range ans.Components {
		s.Components = append(s.Components, sig.ID)
	}
	for _, r := range ans.Results {
		s.Cases = append(s.Cases, store.ScoredCase{CaseID: r.Case.ID, Score: r.Score})
	}
	b.opts.Recorder.RecordSuggestionAsync(s)
}

// channelCache tells incident channels from others, by id or by name
// pattern (names come from conversations.info, cached), and private
// channels from public ones.
type channelCache struct {
	api      *slack.Client
	patterns []string
	ids      map[string]bool

	mu    sync.Mutex
	known map[string]channelInfo
}

type channelInfo struct {
	name    string
	private bool
	ok      bool // conversations.info answered
	at      time.Time
}

func newChannelCache(api *slack.Client, patterns, ids []string) *channelCache {
	c := &channelCache{api: api, patterns: patterns, ids: map[string]bool{}, known: map[string]channelInfo{}}
	for _, id := range ids {
		c.ids[id] = true
	}
	return c
}

// unanswered reports whether the bot knows, without asking Slack, that it
// will not answer m: a message (not a mention) in a direct message or in a
// channel it has looked up and found not to be an incident channel. Such an
// event is handled without an inbox record. A channel not looked up yet is
// recorded, and the record's text is deleted once handled.
func (b *Bot) unanswered(m *message) bool {
	if m.Type != "message" || m.Channel == "" || b.channels.ids[m.Channel] {
		return false
	}
	if m.ChannelType == "im" || m.ChannelType == "mpim" {
		return true
	}
	incident, known := b.channels.cached(m.Channel)
	return known && !incident
}

// channelTTL is how long channel names and privacy are cached; a failed
// look-up is tried again after channelRetry.
const (
	channelTTL   = 10 * time.Minute
	channelRetry = 30 * time.Second
)

// check returns whether a channel is an incident channel and whether it is
// private. When Slack cannot tell, the channel counts as private.
func (c *channelCache) check(ctx context.Context, id, channelType string) (incident, private bool) {
	info := c.info(ctx, id)
	private = channelType == "group" || channelType == "im" || channelType == "mpim" || info.private || !info.ok && channelType == ""
	if c.ids[id] {
		return true, private
	}
	if !info.ok {
		return false, private
	}
	for _, p := range c.patterns {
		if ok, _ := path.Match(p, info.name); ok {
			return true, private
		}
	}
	return false, private
}

// cached returns whether a channel is an incident channel, if its name is
// cached; it never asks Slack.
func (c *channelCache) cached(id string) (incident, known bool) {
	c.mu.Lock()
	ci, ok := c.known[id]
	c.mu.Unlock()
	if !ok || !ci.ok || time.Since(ci.at) >= channelTTL {
		return false, false
	}
	for _, p := range c.patterns {
		if ok, _ := path.Match(p, ci.name); ok {
			return true, true
		}
	}
	return false, true
}

func (c *channelCache) info(ctx context.Context, id string) channelInfo {
	c.mu.Lock()
	if ci, ok := c.known[id]; ok && (ci.ok && time.Since(ci.at) < channelTTL || time.Since(ci.at) < channelRetry) {
		c.mu.Unlock()
		return ci
	}
	c.mu.Unlock()
	ci := channelInfo{at: time.Now()}
	if ch, err := c.api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: id}); err == nil {
		ci = channelInfo{name: ch.Name, private: ch.IsPrivate || ch.IsIM || ch.IsMpIM, ok: true, at: time.Now()}
	}
	c.mu.Lock()
	c.known[id] = ci
	c.mu.Unlock()
	return ci
}
