// Package store keeps incidentbot's activity that must survive a restart:
// the suggestions the bot made, the feedback votes it received, the replies
// it posted, the claims replicas take so that work is done once, the weekly
// digests it posted, the inbox of events recorded before they were acked,
// and the team cases people saved from their incident channels.
//
// The package holds the types, the Store interface and Buffered, a write
// buffer that keeps event handling from waiting on a slow or failing store.
// The implementations live in the subpackages sqlite (embedded, the default)
// and postgres; storetest is the contract suite both pass.
package store

import (
	"context"
	"errors"
	"strings"
	"time"
)

// ErrRejected marks an error of a write the store refused for what it
// holds (a value out of range, a broken constraint), as opposed to a store
// that is away, full or slow. Trying the same write again will not help.
var ErrRejected = errors.New("the store rejected the values")

// Source is what started a suggestion.
type Source string

// The sources of a suggestion.
const (
	SourceAlert    Source = "alert"
	SourcePerson   Source = "person"
	SourceCommand  Source = "command"
	SourceShortcut Source = "shortcut"
	SourceMention  Source = "mention"
)

// ScoredCase is a case the bot suggested, with its score.
type ScoredCase struct {
	CaseID string
	Score  float64
}

// Suggestion is one time the bot suggested past cases.
type Suggestion struct {
	// Key is unique per suggestion event, e.g. "C123:1700000000.000100".
	// Recording the same key twice keeps one row: Slack redelivers events and
	// several replicas may handle one.
	Key        string
	Time       time.Time
	Channel    string
	Private    bool // the channel is private
	Thread     string
	Source     Source
	Lang       string       // "en" or "ko"
	Symptoms   []string     // tag ids extracted from the text
	Components []string     // component tag ids
	Cases      []ScoredCase // the suggested cases, best first
}

// Vote is a feedback vote on a suggested case.
type Vote string

// The votes.
const (
	Helpful     Vote = "helpful"
	NotRelevant Vote = "not_relevant"
)

// Feedback is one person's vote on one case the bot suggested.
type Feedback struct {
	Time time.Time
	// Team is the Slack workspace the vote was cast in: votes steer the
	// ranking only in their own workspace.
	Team    string
	Channel string
	Private bool
	Message string // ts of the bot's reply that carried the buttons
	User    string
	CaseID  string
	Vote    Vote
	// Query is the text that was matched. It is kept locally for curating
	// cases; digests never show it.
	Query string
}

// Reply is the bot's reply in a thread, kept so that a later message in the
// thread updates it instead of posting another.
type Reply struct {
	Channel string
	Thread  string
	ReplyTS string
	Lang    string
	CaseIDs []string
	// Text is the text the reply answered, so that any replica can answer
	// the reply's buttons.
	Text    string
	Updated time.Time
}

// Share is a private answer to the "Find similar incidents" shortcut,
// kept until its "Share in thread" button is pressed, on any replica.
type Share struct {
	ID      string
	Channel string
	Thread  string
	Private bool
	Text    string // the message the answer is for
	Created time.Time
}

// DigestRecord is the state of one weekly digest for one target.
type DigestRecord struct {
	Target    string
	Week      string
	ClaimedBy string
	ClaimedAt time.Time
	PostedAt  *time.Time // nil until the digest is posted
	MessageTS string
}

// InboxItem is an event recorded before it was acked.
type InboxItem struct {
	Key      string // the event's id (unique)
	Kind     string // e.g. "events_api"
	Payload  []byte // what the bot needs to handle the event again; deleted once it is done
	Owner    string // the replica that holds it
	Received time.Time
}

// TeamCase is an incident case the team saved from Slack. The store keeps
// the case as Incident Library JSON and does not read it: checking it is the
// caller's job, and the library's when it loads it.
type TeamCase struct {
	ID      string // unique; the library gives team cases ids of their own ("team-...")
	Case    []byte // the case as Incident Library JSON
	Channel string // where it was captured
	Private bool   // suggested and shown only in Channel
	// CreatedBy and UpdatedBy are Slack user ids. A replace keeps the
	// CreatedBy and CreatedAt the case was first saved with.
	CreatedBy, UpdatedBy string
	// CreatedAt and UpdatedAt are set from the store's clock when zero.
	CreatedAt, UpdatedAt time.Time
	// Version is set by the store: the TeamCasesVersion its put made.
	Version int64
}

// Store keeps incidentbot's activity. Implementations are safe for
// concurrent use, also by several processes sharing one database. Times are
// returned in UTC with at least millisecond precision; empty lists come back
// nil.
type Store interface {
	// RecordSuggestion records s. Recording a Key again is a no-op.
	RecordSuggestion(ctx context.Context, s Suggestion) error
	// RecordFeedback records one vote per (Channel, Message, CaseID, User).
	// A repeat of the same vote is not counted again (counted is false); a
	// changed vote replaces the old one (counted is true).
	RecordFeedback(ctx context.Context, f Feedback) (counted bool, err error)
	// Suggestions returns the suggestions with Time in [from, to), oldest
	// first.
	Suggestions(ctx context.Context, from, to time.Time) ([]Suggestion, error)
	// Feedback returns the votes with Time in [from, to), oldest first.
	Feedback(ctx context.Context, from, to time.Time) ([]Feedback, error)
	// CaseFeedback counts the current votes on a case.
	CaseFeedback(ctx context.Context, caseID string) (helpful, notRelevant int, err error)
	// Votes returns the current votes cast in team with Time at or after
	// since, newest first, at most limit of them (none for limit zero or
	// less).
	Votes(ctx context.Context, team string, since time.Time, limit int) ([]Feedback, error)

	// PutShare records a shortcut answer waiting to be shared; putting an
	// ID again replaces it.
	PutShare(ctx context.Context, sh Share) error
	// GetShare returns the share with id; ok is false when there is none.
	GetShare(ctx context.Context, id string) (sh Share, ok bool, err error)

	// PutReply records or replaces the reply in (r.Channel, r.Thread).
	PutReply(ctx context.Context, r Reply) error
	// GetReply returns the reply in a thread; ok is false when there is none.
	GetReply(ctx context.Context, channel, thread string) (r Reply, ok bool, err error)
	// ClaimReply lets several replicas agree which one posts the first reply
	// in a thread. It returns true when the thread has no reply and no live
	// claim by another owner; the claim then lives for ttl. The owner of a
	// live claim may claim again, which extends it.
	ClaimReply(ctx context.Context, channel, thread, owner string, ttl time.Duration) (bool, error)
	// Claim is a once-only claim on key, e.g. a Slack event id: it returns
	// true for the first caller, whoever the owner, while the claim lives
	// (ttl). An expired claim may be taken again.
	Claim(ctx context.Context, key, owner string, ttl time.Duration) (bool, error)

	// ClaimDigest returns true only if the digest for (target, week) is not
	// posted and no live lease on it is held by another owner; the lease then
	// lives for lease. False may also mean that another replica is claiming
	// it at this moment.
	ClaimDigest(ctx context.Context, target, week, owner string, lease time.Duration) (bool, error)
	// MarkDigestPosted records that owner posted the digest for (target,
	// week) as messageTS at the given time. The first mark wins: marking a
	// posted digest again changes nothing.
	MarkDigestPosted(ctx context.Context, target, week, owner, messageTS string, at time.Time) error
	// DigestPosted returns the record of the digest for (target, week); posted
	// is true only when the digest was posted. A record that was only
	// claimed is returned with posted false.
	DigestPosted(ctx context.Context, target, week string) (r DigestRecord, posted bool, err error)

	// InboxPut records an event before it is acked, held by item.Owner for
	// lease; Received is set from the store's clock, not taken from item. It
	// returns false when the key was recorded before (a redelivery): the
	// caller acks and skips it. Whether the earlier record is done or not
	// does not matter: one that is not is InboxOrphans' to hand out.
	InboxPut(ctx context.Context, item InboxItem, lease time.Duration) (bool, error)
	// InboxDone marks an event handled and deletes its payload: only the
	// key is kept, to dedupe redeliveries until purged. Marking a key again,
	// or a key never put, is not an error.
	InboxDone(ctx context.Context, key string) error
	// InboxOrphans takes over up to limit events that are not done and whose
	// holder's lease has expired: it re-leases them to owner for lease and
	// returns them, oldest first. Two replicas calling it at once never get
	// the same item. A holder that outlives its lease loses the event to
	// another replica, so a lease must be longer than handling an event
	// takes. A limit of zero or less returns nothing.
	InboxOrphans(ctx context.Context, owner string, lease time.Duration, limit int) ([]InboxItem, error)
	// InboxRenew extends the lease of every event owner holds and has not
	// done, to lease from now, and returns how many it renewed. A replica
	// calls it regularly while it lives, so that only the events of a
	// replica that stopped expire and are taken over, however long its
	// queue.
	InboxRenew(ctx context.Context, owner string, lease time.Duration) (int64, error)

	// InboxPurge deletes the inbox events received before before, done or
	// not, and returns how many it deleted. The inbox is kept only for as
	// long as it helps: a redelivery comes within minutes, and an event
	// that old is no longer worth answering.
	InboxPurge(ctx context.Context, before time.Time) (int64, error)

	// PutTeamCase inserts c, or replaces the team case with its ID, and
	// returns the row as stored, with its Version. Puts from several
	// replicas at once all land. An empty ID or Case is rejected
	// (ErrRejected).
	PutTeamCase(ctx context.Context, c TeamCase) (TeamCase, error)
	// TeamCase returns the team case with id; ok is false when there is none.
	TeamCase(ctx context.Context, id string) (c TeamCase, ok bool, err error)
	// TeamCases returns every team case, by ID.
	TeamCases(ctx context.Context) ([]TeamCase, error)
	// DeleteTeamCase deletes the team case with id and reports whether
	// there was one.
	DeleteTeamCase(ctx context.Context, id string) (bool, error)
	// TeamCasesVersion is cheap to call and grows with every put and every
	// delete that removed a case, so that a replica polling it knows when to
	// read the team cases again. It is 0 before the first put. When it reads
	// v, every put or delete that made a version up to v is visible.
	TeamCasesVersion(ctx context.Context) (int64, error)

	// Purge deletes the suggestions, feedback, replies and shares older than before,
	// the inbox events received before it, done or not, and every claim that
	// has expired (an expired claim may be taken again, so deleting it
	// changes nothing else). Digest records are kept: they are small and
	// needed for exactly-once posting. It returns the number of rows
	// deleted.
	Purge(ctx context.Context, before time.Time) (int64, error)
	// Ping checks that the store can be reached.
	Ping(ctx context.Context) error
	// Close releases the store's resources.
	Close() error
}

// CleanText makes s storable as text in every store: bytes that are not
// UTF-8 become U+FFFD and NUL characters are removed (PostgreSQL refuses
// both, and would lose the whole row).
func CleanText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// Clean returns s with every text field passed through CleanText; the
// stores record suggestions cleaned.
func (s Suggestion) Clean() Suggestion {
	s.Key, s.Channel, s.Thread, s.Lang = CleanText(s.Key), CleanText(s.Channel), CleanText(s.Thread), CleanText(s.Lang)
	s.Symptoms, s.Components = cleanList(s.Symptoms), cleanList(s.Components)
	if s.Cases != nil {
		cs := make([]ScoredCase, len(s.Cases))
		for i, c := range s.Cases {
			cs[i] = ScoredCase{CaseID: CleanText(c.CaseID), Score: c.Score}
		}
		s.Cases = cs
	}
	return s
}

// Clean returns f with every text field passed through CleanText; the
// stores record votes cleaned.
func (f Feedback) Clean() Feedback {
	f.Team, f.Channel, f.Message, f.User = CleanText(f.Team), CleanText(f.Channel), CleanText(f.Message), CleanText(f.User)
	f.CaseID, f.Query = CleanText(f.CaseID), CleanText(f.Query)
	return f
}

// Clean returns c with every text field passed through CleanText; the
// stores keep team cases cleaned. Case is kept as it is: it is bytes.
func (c TeamCase) Clean() TeamCase {
	c.ID, c.Channel = CleanText(c.ID), CleanText(c.Channel)
	c.CreatedBy, c.UpdatedBy = CleanText(c.CreatedBy), CleanText(c.UpdatedBy)
	return c
}

// Clean returns r with every text field passed through CleanText.
func (r Reply) Clean() Reply {
	r.Channel, r.Thread, r.ReplyTS, r.Lang, r.Text = CleanText(r.Channel), CleanText(r.Thread), CleanText(r.ReplyTS), CleanText(r.Lang), CleanText(r.Text)
	r.CaseIDs = cleanList(r.CaseIDs)
	return r
}

// Clean returns sh with every text field passed through CleanText.
func (sh Share) Clean() Share {
	sh.ID, sh.Channel, sh.Thread, sh.Text = CleanText(sh.ID), CleanText(sh.Channel), CleanText(sh.Thread), CleanText(sh.Text)
	return sh
}

func cleanList(l []string) []string {
	if l == nil {
		return nil
	}
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = CleanText(s)
	}
	return out
}
