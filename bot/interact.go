package bot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
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
		id := newShareID()
		// Kept in the shared state, so that whichever replica Slack
		// delivers the press to can share it. Without it the answer goes
		// out without the button: a button that says "expired" helps no one.
		err := b.opts.State.PutShare(ctx, store.Share{ID: id, Channel: channel, Thread: thread, Private: private,
			Text: replyText(text), Created: time.Now().UTC()})
		if err != nil {
			b.log.Warn("keeping the shortcut answer for sharing failed", "channel", channel, "err", err)
			id = ""
		}
		blocks, fallback = renderReply(ans.Results, lang, replyOptions{share: id, library: b.opts.PublicURL})
		key := "shortcut:" + id
		if id == "" {
			key = "shortcut:" + in.TriggerID
		}
		b.record(answer{channel: channel, private: private, thread: thread, source: store.SourceShortcut, key: key}, ans, lang)
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
	_, private := b.channels.check(ctx, channel, "")
	reply, replied, _ := b.opts.State.GetReply(ctx, channel, thread)
	// The text voted on: this replica's memory of the thread, or what the
	// replica that replied kept with its reply.
	query := reply.Text
	if th, ok := b.threads.get(channel, thread); ok && th.text != "" {
		query = th.text
	}
	vote := store.NotRelevant
	if helpful {
		vote = store.Helpful
	}
	// The bot is installed in one workspace, the one auth.test names: its
	// Socket Mode connection gets that workspace's presses only.
	f := store.Feedback{Time: time.Now().UTC(), Team: b.teamID, Channel: channel, Private: private,
		Message: in.Container.MessageTS, User: in.User.ID, CaseID: caseID, Vote: vote, Query: query}
	if b.opts.Recorder != nil {
		b.opts.Recorder.RecordFeedbackAsync(f)
	}
	if strings.TrimSpace(query) != "" {
		b.votes.add(f) // steers this replica's next reply at once
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
	if replied && reply.Lang != "" {
		lang = cases.Lang(reply.Lang)
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
	// The reply's text and cases are in the shared state, whichever
	// replica replied; this replica's memory of the thread may be newer.
	r, replied, err := b.opts.State.GetReply(ctx, channel, thread)
	if err != nil {
		b.log.Warn("reply state unavailable for show more", "channel", channel, "err", err)
	}
	text := r.Text
	if th, ok := b.threads.get(channel, thread); ok && th.text != "" {
		text = th.text
	}
	lang := b.opts.DefaultLang
	if replied && r.Lang != "" {
		lang = cases.Lang(r.Lang)
	}
	if strings.TrimSpace(text) == "" {
		blocks, fallback := renderText(say(lang, "no_more"))
		_ = b.post.ephemeral(ctx, channel, in.User.ID, thread, blocks, fallback)
		return
	}
	ans, err := b.match(ctx, channel, text, b.opts.Top*3)
	if err != nil {
		b.log.Error("show more failed", "err", err)
		return
	}
	lang = b.langOf(text, ans.Lang)
	shown := map[string]bool{}
	for _, id := range r.CaseIDs {
		shown[id] = true
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
	p, ok, err := b.opts.State.GetShare(ctx, id)
	if err != nil {
		b.log.Warn("reading a shortcut answer to share failed", "err", err)
	}
	if err != nil {
		// The answer may well be there: keep it, with its button, and say
		// to press it again.
		blocks, fallback := renderText(say(b.opts.DefaultLang, "share_error"))
		if in.ResponseURL != "" {
			_ = b.post.respond(ctx, in.ResponseURL, blocks, fallback)
		}
		return
	}
	if !ok || time.Since(p.Created) > shareTTL {
		blocks, fallback := renderText(say(b.opts.DefaultLang, "expired"))
		if in.ResponseURL != "" {
			_ = b.post.respond(ctx, in.ResponseURL, blocks, fallback, slack.MsgOptionReplaceOriginal(in.ResponseURL))
		}
		return
	}
	// A shortcut works in any channel, but the bot posts only where it is
	// a member. Asked first, so that no post is tried (and no reply marked
	// as being posted) where it cannot be; asked afresh, so that a share
	// right after the bot was invited goes out.
	if ch, err := b.api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: p.Channel}); err == nil && !ch.IsMember && !ch.IsIM || notMember(err) {
		b.tellNotMember(ctx, in, p)
		return
	}
	b.threads.add(p.Channel, p.Thread, true, p.Text, p.Private)
	err = b.answerThread(ctx, answer{channel: p.Channel, thread: p.Thread, private: p.Private, text: p.Text,
		source: store.SourceShortcut, key: "share:" + id, mention: true, user: in.User.ID})
	if notMember(err) {
		b.tellNotMember(ctx, in, p)
		return
	}
	if err != nil || in.ResponseURL == "" {
		return
	}
	if err := b.post.respond(ctx, in.ResponseURL, nil, "", slack.MsgOptionDeleteOriginal(in.ResponseURL)); err != nil {
		b.log.Debug("removing the shared ephemeral answer failed", "err", err)
	}
}

// tellNotMember tells the asker that their answer could not be shared
// because the bot is not in the channel, and what to do. The private
// answer stays where they see it.
func (b *Bot) tellNotMember(ctx context.Context, in *interaction, p store.Share) {
	b.log.Info("cannot share in a channel the bot is not a member of", "channel", p.Channel)
	lang := b.langOf(p.Text, matcher.DetectLang(p.Text))
	blocks, fallback := renderText(say(lang, "not_member", p.Channel, b.userID))
	var err error
	if in.ResponseURL != "" {
		err = b.post.respond(ctx, in.ResponseURL, blocks, fallback)
	} else {
		err = b.post.ephemeral(ctx, p.Channel, in.User.ID, p.Thread, blocks, fallback)
	}
	if err != nil {
		b.log.Warn("telling the asker the answer was not shared failed", "channel", p.Channel, "err", err)
	}
}

// notMember reports Slack's answer to a post in a channel the bot has not
// joined (a public one: not_in_channel; a private one it cannot see:
// channel_not_found).
func notMember(err error) bool {
	var se slack.SlackErrorResponse
	return errors.As(err, &se) && (se.Err == "not_in_channel" || se.Err == "channel_not_found")
}

// shareTTL is how long a shortcut answer can be shared.
const shareTTL = 30 * time.Minute

// newShareID returns a fresh id for a shortcut answer.
func newShareID() string {
	var buf [8]byte
	_, _ = rand.Read(buf[:])
	return hex.EncodeToString(buf[:])
}
