package bot

import (
	"context"
	"sync"
	"time"

	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/store"
)

// VoteReader reads the votes cast in a workspace, newest first; the
// activity store implements it.
type VoteReader interface {
	Votes(ctx context.Context, team string, since time.Time, limit int) ([]store.Feedback, error)
}

// maxVotes bounds the votes a replica keeps to steer its replies: the
// workspace's newest within the vote window. A reply compares its text
// with each distinct voted text in memory, without asking the store.
const maxVotes = 5000

// localKeep is how long a vote cast on this replica is kept beside what
// the store returns: the write buffer may not have stored it yet.
const localKeep = 2 * time.Minute

// voteKey is what a vote is one of: a person's vote on a case in a reply.
type voteKey struct{ channel, message, caseID, user string }

type cachedVote struct {
	vote    store.Vote
	at      time.Time
	private bool               // cast in a private channel: steers replies there only
	sig     *matcher.Signature // shared by the votes cast on one text
}

// votes are the votes that steer replies: the workspace's newest, read
// from the store every refresh, and those cast here since.
type votes struct {
	mu    sync.RWMutex
	all   map[voteKey]cachedVote
	sigs  map[string]*matcher.Signature // by the text voted on
	local map[voteKey]cachedVote        // cast on this replica within localKeep
}

func newVotes() *votes {
	return &votes{all: map[voteKey]cachedVote{}, sigs: map[string]*matcher.Signature{}, local: map[voteKey]cachedVote{}}
}

func keyOf(f store.Feedback) voteKey { return voteKey{f.Channel, f.Message, f.CaseID, f.User} }

// sigLocked returns the signature of a voted text, read once per text.
func (v *votes) sigLocked(text string, sigs map[string]*matcher.Signature) *matcher.Signature {
	if s, ok := sigs[text]; ok {
		return s
	}
	s, ok := v.sigs[text]
	if !ok {
		sig := matcher.SignatureOf(text)
		s = &sig
	}
	sigs[text] = s
	return s
}

// add keeps a vote cast on this replica: it steers the next reply at once.
func (v *votes) add(f store.Feedback) {
	sig := matcher.SignatureOf(f.Query)
	v.mu.Lock()
	defer v.mu.Unlock()
	cv := cachedVote{vote: f.Vote, at: f.Time, private: f.Private, sig: &sig}
	v.all[keyOf(f)] = cv
	v.local[keyOf(f)] = cv
}

// replace sets the votes to those read from the store, with the votes cast
// here lately that it may not have yet; votes before since are dropped.
func (v *votes) replace(rows []store.Feedback, since, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	all := make(map[voteKey]cachedVote, len(rows))
	sigs := make(map[string]*matcher.Signature, len(v.sigs))
	for _, f := range rows {
		all[keyOf(f)] = cachedVote{vote: f.Vote, at: f.Time, private: f.Private, sig: v.sigLocked(f.Query, sigs)}
	}
	for k, cv := range v.local {
		if now.Sub(cv.at) > localKeep {
			delete(v.local, k)
			continue
		}
		if old, ok := all[k]; !ok || old.at.Before(cv.at) {
			all[k] = cv
		}
	}
	for k, cv := range all {
		if cv.at.Before(since) {
			delete(all, k)
		}
	}
	v.all, v.sigs = all, sigs // the signatures of texts no longer voted on go
}

// boosts counts, for each case, the votes cast on texts similar to text
// (matcher.Signature.Similar) since the given time, for a reply in
// channel. A vote cast in a private channel counts there only: what was
// said there, even as a vote, stays there.
func (v *votes) boosts(channel, text string, since time.Time) []matcher.Boost {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if len(v.all) == 0 {
		return nil
	}
	sig := matcher.SignatureOf(text)
	similar := make(map[*matcher.Signature]bool, len(v.sigs))
	byCase := map[string]*matcher.Boost{}
	var order []string
	for k, cv := range v.all {
		if cv.at.Before(since) || cv.private && k.channel != channel {
			continue
		}
		sim, ok := similar[cv.sig]
		if !ok {
			sim = sig.Similar(*cv.sig)
			similar[cv.sig] = sim
		}
		if !sim {
			continue
		}
		b := byCase[k.caseID]
		if b == nil {
			b = &matcher.Boost{CaseID: k.caseID}
			byCase[k.caseID] = b
			order = append(order, k.caseID)
		}
		if cv.vote == store.Helpful {
			b.Helpful++
		} else {
			b.NotRelevant++
		}
	}
	out := make([]matcher.Boost, 0, len(order))
	for _, id := range order {
		out = append(out, *byCase[id])
	}
	return out
}

// refreshVotes reads the workspace's votes from the store every
// VoteRefresh until ctx ends, so that votes cast on other replicas steer
// this one's replies too (Run reads them once before taking events).
func (b *Bot) refreshVotes(ctx context.Context) {
	if b.opts.Votes == nil {
		return
	}
	t := time.NewTicker(b.opts.VoteRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b.loadVotes(ctx)
	}
}

// voteReadTimeout bounds one read of the votes.
const voteReadTimeout = 5 * time.Second

func (b *Bot) loadVotes(ctx context.Context) {
	if b.opts.Votes == nil {
		return
	}
	now := time.Now()
	since := now.Add(-b.opts.VoteWindow)
	readCtx, cancel := context.WithTimeout(ctx, voteReadTimeout)
	defer cancel()
	rows, err := b.opts.Votes.Votes(readCtx, b.teamID, since, maxVotes)
	if err != nil {
		if ctx.Err() == nil {
			b.log.Warn("reading votes failed; replies are steered by the votes read before", "err", err)
		}
		return
	}
	b.votes.replace(rows, since, now)
}
