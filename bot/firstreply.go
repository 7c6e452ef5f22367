package bot

import (
	"context"
	"log/slog"
	"time"

	"github.com/incidentbot/incidentbot/store"
)

// firstReply is how replicas sharing a State agree that a thread gets one
// reply from the bot, even when a replica stops halfway:
//   - a replica claims the thread before posting; only the claim's holder
//     posts (the claim lives for ttl);
//   - before posting it marks the reply as being posted (a store.Reply without
//     ReplyTS), and after posting it records where the reply is;
//   - while a marker is fresh the thread is another replica's; a marker
//     older than a claim, or one met by a replica taking over a stopped
//     replica's event, means the poster stopped: Slack is asked whether the
//     reply went out before posting again.
type firstReply struct {
	state State
	ttl   time.Duration
	// find asks Slack for the bot's reply in a thread: its ts, or "" when
	// there is none or Slack cannot tell.
	find func(ctx context.Context, channel, thread string) string
	now  func() time.Time
	log  *slog.Logger
}

// threadState says what a replica may do in a thread.
type threadState int

const (
	threadOpen     threadState = iota // no reply: claim the thread and post one
	threadAnswered                    // the reply is posted: update it
	threadBusy                        // another replica is posting the reply now
	threadTakeover                    // a stopped replica began posting and Slack has no reply: post without claiming
)

// look returns a thread's reply record and what to do. orphan is set when
// handling an event taken over from a stopped replica. A State error is
// returned with threadOpen: a rare duplicate beats a lost answer.
func (f *firstReply) look(ctx context.Context, channel, thread string, orphan bool) (store.Reply, threadState, error) {
	r, ok, err := f.state.GetReply(ctx, channel, thread)
	switch {
	case err != nil || !ok:
		return store.Reply{}, threadOpen, err
	case r.ReplyTS != "":
		return r, threadAnswered, nil
	case !orphan && f.now().Sub(r.Updated) < f.ttl:
		return r, threadBusy, nil
	}
	if ts := f.find(ctx, channel, thread); ts != "" {
		// The poster stopped after posting, before recording where.
		r.ReplyTS = ts
		f.put(ctx, r)
		return r, threadAnswered, nil
	}
	return r, threadTakeover, nil
}

// post posts a thread's first reply r with send, unless another replica
// holds the thread's claim; takeover skips the claim, for a thread whose
// poster stopped (look said so). It reports whether send was called, and
// returns send's error. State errors are logged: the reply is posted
// anyway, as a rare duplicate beats a lost answer.
func (f *firstReply) post(ctx context.Context, r store.Reply, takeover bool, send func(context.Context) (string, error)) (bool, error) {
	if !takeover {
		ok, err := f.state.ClaimReply(ctx, r.Channel, r.Thread, f.ttl)
		if err != nil {
			f.log.Warn("reply claim unavailable; posting", "channel", r.Channel, "err", err)
		} else if !ok {
			return false, nil
		}
	}
	// Mark the reply as being posted, so that whoever takes this over after
	// a crash knows to ask Slack before posting again.
	r.ReplyTS = ""
	f.put(ctx, r)
	ts, err := send(ctx)
	if err != nil {
		return true, err
	}
	r.ReplyTS = ts
	f.put(ctx, r)
	return true, nil
}

// put records r, logging a failure.
func (f *firstReply) put(ctx context.Context, r store.Reply) {
	if err := f.state.PutReply(ctx, r); err != nil {
		f.log.Warn("saving reply state failed", "channel", r.Channel, "err", err)
	}
}
