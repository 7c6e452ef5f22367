package bot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/store"
)

// ShortcutID is the callback id of the "Find similar incidents" message
// shortcut in the app manifest.
const ShortcutID = "find_similar_incidents"

// interaction is an interactive payload, read from the raw JSON so the
// message's blocks can be edited as they are.
type interaction struct {
	Type        string `json:"type"`
	TriggerID   string `json:"trigger_id"`
	CallbackID  string `json:"callback_id"`
	ResponseURL string `json:"response_url"`
	User        struct {
		ID string `json:"id"`
	} `json:"user"`
	Channel struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"channel"`
	Message   *message `json:"message"`
	Container struct {
		MessageTS   string `json:"message_ts"`
		ChannelID   string `json:"channel_id"`
		ThreadTS    string `json:"thread_ts"`
		IsEphemeral bool   `json:"is_ephemeral"`
	} `json:"container"`
	Actions []struct {
		ActionID string `json:"action_id"`
		BlockID  string `json:"block_id"`
		Value    string `json:"value"`
	} `json:"actions"`
}

// onInteractive takes an interactive envelope (a button, the shortcut): it
// records it in the inbox (when there is one) before acking, so that a
// replica that dies right after the ack does not lose the press, acks, and
// queues the work.
func (b *Bot) onInteractive(ctx context.Context, req *socketmode.Request) {
	var in interaction
	if err := json.Unmarshal(req.Payload, &in); err != nil {
		b.ack(ctx, req, nil)
		b.log.Warn("interactive payload not understood", "envelope_id", req.EnvelopeID, "err", err)
		return
	}
	if in.Type == "view_submission" {
		// Answered in the ack itself, after the save: nothing to record.
		b.onViewSubmission(ctx, req)
		return
	}
	key := ""
	if in.TriggerID != "" {
		key = "ia:" + in.TriggerID
	}
	// The inbox keeps only the fields the bot reads.
	record := req.Payload
	if data, err := json.Marshal(in); err == nil {
		record = data
	}
	b.recordThenAck(ctx, req, key, kindInteractive, record, func(fresh bool) {
		if fresh {
			b.queueInteraction(&in, key, false)
		}
	})
}

// Kinds of inbox items.
const (
	kindEvent       = "events_api"
	kindInteractive = "interactive"
)

// queueInteraction queues the work for an interaction; key is its inbox key
// ("" without one), and orphan is set for one taken over from a stopped
// replica. Work that opens a modal runs at once instead: its trigger_id
// lasts only seconds, too short to wait in a queue, and is stale in an
// orphan.
func (b *Bot) queueInteraction(in *interaction, key string, orphan bool) {
	channel := in.Channel.ID
	if channel == "" {
		channel = in.Container.ChannelID
	}
	thread := ""
	if in.Message != nil {
		thread = in.Message.ThreadTS
		if thread == "" {
			thread = in.Message.TS
		}
	}
	if run := b.captureWork(in, channel, thread, orphan); run != nil {
		b.goCapture(func(ctx context.Context) {
			defer b.inboxDone(key)
			run(ctx)
		}, func() { b.inboxDone(key) })
		return
	}
	j := job{shard: channel + ":" + thread, inbox: key}
	var handle func(ctx context.Context)
	switch {
	case in.Type == "message_action" && in.CallbackID == ShortcutID:
		handle = func(ctx context.Context) { b.onShortcut(ctx, in, channel) }
	case in.Type == "block_actions" && len(in.Actions) > 0:
		handle = func(ctx context.Context) { b.onAction(ctx, in, channel, thread) }
	default:
		b.log.Debug("interaction ignored", "type", in.Type, "callback_id", in.CallbackID)
		b.inboxDone(key)
		return
	}
	j.run = func(ctx context.Context) {
		defer b.inboxDone(key)
		handle(ctx)
	}
	b.q.push(j)
}

// onShortcut answers "Find similar incidents" on a message, privately, with
// a button to share the answer in the message's thread.
func (b *Bot) onShortcut(ctx context.Context, in *interaction, channel string) {
	if in.Message == nil {
		return
	}
	text := in.Message.fullText()
	ans, err := b.match(ctx, channel, text, b.opts.Top)
	if err != nil {
		b.log.Error("shortcut match failed", "err", err)
		return
	}
	lang := b.langOf(text, ans.Lang)
	thread := in.Message.ThreadTS
	if thread == "" {
		thread = in.Message.TS
	}
	var blocks []slack.Block
	var fallback string
	if len(ans.Results) == 0 {
		blocks, fallback = renderText(say(lang, "none"))
	} else {
		_, private := b.channels.check(ctx, channel, "")
		id := b.shares.put(pendingShare{channel: channel, thread: thread, private: private, text: text})
		blocks, fallback = renderReply(ans.Results, lang, replyOptions{share: id, library: b.opts.PublicURL})
		b.record(answer{channel: channel, private: private, thread: thread, source: store.SourceShortcut, key: "shortcut:" + id}, ans, lang)
	}
	// A shortcut works in channels the bot is not in; then only the
	// response URL reaches the user.
	if err := b.post.ephemeral(ctx, channel, in.User.ID, thread, blocks, fallback); err != nil {
		if in.ResponseURL == "" {
			b.log.Warn("shortcut answer failed", "channel", channel, "err", err)
			return
		}
		if err := b.post.respond(ctx, in.ResponseURL, blocks, fallback); err != nil {
			b.log.Warn("shortcut answer failed", "channel", channel, "err", err)
		}
	}
}

func (b *Bot) onAction(ctx context.Context, in *interaction, channel, thread string) {
	act := in.Actions[0]
	switch act.ActionID {
	case actionHelpful, actionNotRelevant:
		b.onFeedback(ctx, in, channel, thread, act.Value, act.ActionID == actionHelpful)
	case actionShowMore:
		b.onShowMore(ctx, in, channel, thread)
	case actionShare:
		b.onShare(ctx, in, act.Value)
	}
}

// onFeedback records a vote and acknowledges it on the message itself.
func (b *Bot) onFeedback(ctx context.Context, in *interaction, channel, thread, caseID string, helpful bool) {
	th, _ := b.threads.get(channel, thread)
	_, private := b.channels.check(ctx, channel, "")
	if b.opts.Recorder != nil {
		vote := store.NotRelevant
		if helpful {
			vote = store.Helpful
		}
		b.opts.Recorder.RecordFeedbackAsync(store.Feedback{Time: time.Now().UTC(), Channel: channel, Private: private,
			Message: in.Container.MessageTS, User: in.User.ID, CaseID: caseID, Vote: vote, Query: th.text})
	}
	if in.Message == nil {
		return
	}
	var blocks slack.Blocks
	if err := json.Unmarshal(in.Message.Blocks, &blocks); err != nil {
		b.log.Warn("cannot read the blocks of the voted message", "err", err)
		return
	}
	lang := cases.English
	if r, ok, _ := b.opts.State.GetReply(ctx, channel, thread); ok && r.Lang != "" {
		lang = cases.Lang(r.Lang)
	} else if matcher.DetectLang(in.Message.Text) == cases.Korean {
		lang = cases.Korean
	}
	key := "marked_n"
	if helpful {
		key = "marked_h"
	}
	note := slack.NewContextBlock("", mrkdwn(say(lang, key, in.User.ID)))
	out := addNote(blocks.BlockSet, "case:"+caseID+":actions", note)
	if len(out) > maxBlocks {
		return // the vote is recorded; the message is full
	}
	if in.Container.IsEphemeral {
		if in.ResponseURL != "" {
			_ = b.post.respond(ctx, in.ResponseURL, out, in.Message.Text, slack.MsgOptionReplaceOriginal(in.ResponseURL))
		}
		return
	}
	if err := b.post.update(ctx, channel, in.Container.MessageTS, out, in.Message.Text); err != nil {
		b.log.Warn("acknowledging a vote failed", "channel", channel, "err", err)
	}
}

// addNote inserts note after the block with id after (or at the end),
// replacing an earlier note by the same user and block.
func addNote(blocks []slack.Block, after string, note slack.Block) []slack.Block {
	out := slices.Clone(blocks)
	at := len(out)
	for i, bl := range out {
		if bl.ID() == after {
			at = i + 1
			break
		}
	}
	return slices.Insert(out, at, note)
}

// onShowMore shows the asker the next most similar cases, privately.
func (b *Bot) onShowMore(ctx context.Context, in *interaction, channel, thread string) {
	th, ok := b.threads.get(channel, thread)
	lang := b.opts.DefaultLang
	if !ok {
		blocks, fallback := renderText(say(lang, "no_more"))
		_ = b.post.ephemeral(ctx, channel, in.User.ID, thread, blocks, fallback)
		return
	}
	ans, err := b.match(ctx, channel, th.text, b.opts.Top*3)
	if err != nil {
		b.log.Error("show more failed", "err", err)
		return
	}
	lang = b.langOf(th.text, ans.Lang)
	shown := map[string]bool{}
	if r, ok, _ := b.opts.State.GetReply(ctx, channel, thread); ok {
		for _, id := range r.CaseIDs {
			shown[id] = true
		}
	}
	var more []matcher.Result
	for _, r := range ans.Results {
		if !shown[r.Case.ID] {
			more = append(more, r)
		}
	}
	blocks, fallback := renderText(say(lang, "no_more"))
	if len(more) > 0 {
		blocks, fallback = renderReply(more, lang, replyOptions{heading: "more_heading", library: b.opts.PublicURL})
	}
	if err := b.post.ephemeral(ctx, channel, in.User.ID, thread, blocks, fallback); err != nil {
		b.log.Warn("show more failed", "channel", channel, "err", err)
	}
}

// onShare posts a shortcut's private answer in the message's thread.
func (b *Bot) onShare(ctx context.Context, in *interaction, id string) {
	p, ok := b.shares.get(id)
	if !ok {
		blocks, fallback := renderText(say(b.opts.DefaultLang, "expired"))
		if in.ResponseURL != "" {
			_ = b.post.respond(ctx, in.ResponseURL, blocks, fallback, slack.MsgOptionReplaceOriginal(in.ResponseURL))
		}
		return
	}
	b.threads.add(p.channel, p.thread, true, p.text, p.private)
	b.answerThread(ctx, answer{channel: p.channel, thread: p.thread, private: p.private, text: p.text,
		source: store.SourceShortcut, key: "share:" + id, mention: true, user: in.User.ID})
	if in.ResponseURL != "" {
		if err := b.post.respond(ctx, in.ResponseURL, nil, "", slack.MsgOptionDeleteOriginal(in.ResponseURL)); err != nil {
			b.log.Debug("removing the shared ephemeral answer failed", "err", err)
		}
	}
}

// pendingShare is a shortcut answer waiting for its Share button.
type pendingShare struct {
	channel, thread string
	private         bool
	text            string
	at              time.Time
}

// shareTTL is how long a shortcut answer can be shared.
const shareTTL = 30 * time.Minute

type shareCache struct {
	mu sync.Mutex
	m  *lru[pendingShare]
}

func newShareCache(n int) *shareCache { return &shareCache{m: newLRU[pendingShare](n)} }

func (s *shareCache) put(p pendingShare) string {
	var buf [8]byte
	_, _ = rand.Read(buf[:])
	id := hex.EncodeToString(buf[:])
	p.at = time.Now()
	s.mu.Lock()
	s.m.put(id, p)
	s.mu.Unlock()
	return id
}

func (s *shareCache) get(id string) (pendingShare, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.m.get(id)
	if !ok || time.Since(p.at) > shareTTL {
		return pendingShare{}, false
	}
	return p, true
}
