package bot

import (
	"container/list"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/incidentbot/incidentbot/store"
)

// State is what replicas of the bot must agree on: which events were
// handled, which thread has which reply. The default keeps it in memory; a
// shared store makes several replicas act as one.
type State interface {
	// Claim returns true for the first caller of key while its claim lives.
	Claim(ctx context.Context, key string, ttl time.Duration) (bool, error)
	// ClaimReply returns true for the one caller that may post the first
	// reply in a thread.
	ClaimReply(ctx context.Context, channel, thread string, ttl time.Duration) (bool, error)
	// PutReply records the reply in a thread; a Reply without ReplyTS
	// marks it as being posted. The State sets Updated.
	PutReply(ctx context.Context, r store.Reply) error
	GetReply(ctx context.Context, channel, thread string) (store.Reply, bool, error)
	// PutShare keeps a shortcut's private answer until its Share in thread
	// button is pressed, on whichever replica Slack delivers the press to.
	PutShare(ctx context.Context, sh store.Share) error
	GetShare(ctx context.Context, id string) (store.Share, bool, error)
}

// memState is the in-memory State: bounded, with expiry.
type memState struct {
	mu      sync.Mutex
	now     func() time.Time
	claims  map[string]time.Time // key -> expiry
	replies *lru[store.Reply]
	shares  *lru[store.Share]
	order   []string // claim keys in insertion order, for pruning
}

// NewMemState returns the in-memory State a bot uses when given none.
func NewMemState() State { return newMemState(time.Now) }

func newMemState(now func() time.Time) *memState {
	return &memState{now: now, claims: map[string]time.Time{}, replies: newLRU[store.Reply](20000), shares: newLRU[store.Share](2000)}
}

const maxClaims = 200000

func (s *memState) Claim(_ context.Context, key string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if exp, ok := s.claims[key]; ok && now.Before(exp) {
		return false, nil
	}
	s.claims[key] = now.Add(ttl)
	s.order = append(s.order, key)
	if len(s.order) > maxClaims {
		s.prune(now)
	}
	return true, nil
}

// prune drops expired claims and, if too many live ones remain, the oldest
// half of them.
func (s *memState) prune(now time.Time) {
	keep := s.order[:0]
	for _, k := range s.order {
		if exp, ok := s.claims[k]; ok && now.Before(exp) {
			keep = append(keep, k)
		} else {
			delete(s.claims, k)
		}
	}
	if len(keep) > maxClaims/2 {
		for _, k := range keep[:len(keep)/2] {
			delete(s.claims, k)
		}
		keep = keep[len(keep)/2:]
	}
	s.order = slices.Clone(keep)
}

func (s *memState) ClaimReply(ctx context.Context, channel, thread string, ttl time.Duration) (bool, error) {
	if _, ok, _ := s.GetReply(ctx, channel, thread); ok {
		return false, nil
	}
	return s.Claim(ctx, "reply:"+channel+":"+thread, ttl)
}

func (s *memState) PutReply(_ context.Context, r store.Reply) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Updated = s.now()
	s.replies.put(r.Channel+":"+r.Thread, r)
	return nil
}

func (s *memState) GetReply(_ context.Context, channel, thread string) (store.Reply, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.replies.get(channel + ":" + thread)
	return r, ok, nil
}

func (s *memState) PutShare(_ context.Context, sh store.Share) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shares.put(sh.ID, sh)
	return nil
}

func (s *memState) GetShare(_ context.Context, id string) (store.Share, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.shares.get(id)
	return sh, ok, nil
}

// lru is a bounded map that forgets the least recently used entries. It is
// not safe for concurrent use.
type lru[V any] struct {
	max   int
	ll    *list.List
	items map[string]*list.Element
}

type lruEntry[V any] struct {
	key string
	val V
}

func newLRU[V any](max int) *lru[V] {
	return &lru[V]{max: max, ll: list.New(), items: map[string]*list.Element{}}
}

func (l *lru[V]) get(key string) (V, bool) {
	if e, ok := l.items[key]; ok {
		l.ll.MoveToFront(e)
		return e.Value.(*lruEntry[V]).val, true
	}
	var zero V
	return zero, false
}

func (l *lru[V]) put(key string, v V) {
	if e, ok := l.items[key]; ok {
		e.Value.(*lruEntry[V]).val = v
		l.ll.MoveToFront(e)
		return
	}
	l.items[key] = l.ll.PushFront(&lruEntry[V]{key: key, val: v})
	if l.ll.Len() > l.max {
		last := l.ll.Back()
		l.ll.Remove(last)
		delete(l.items, last.Value.(*lruEntry[V]).key)
	}
}

// thread is what the bot remembers of a thread it has seen, so that a
// mention without text can be answered for the thread's first message
// without calling conversations.replies.
type thread struct {
	root    string // text of the first message
	text    string // the thread's text so far, bounded
	private bool
}

// maxThreadText bounds the text kept per thread; maxRootText bounds its
// first message, kept apart for a mention that comes without text.
const (
	maxThreadText = 16 << 10
	maxRootText   = 4 << 10
)

// maxChatterThreads bounds the threads remembered in channels the bot does
// not answer in, where only a mention is answered: with maxRootText each,
// they hold at most 8 MiB however much is said there.
const maxChatterThreads = 2000

// threads remembers recent threads. Every string kept is a copy of just
// what is kept: a slice of a message's text would keep the whole message,
// and a flood of large messages the whole flood.
type threads struct {
	mu      sync.Mutex
	m       *lru[*thread] // threads the bot answers in
	chatter *lru[*thread] // first messages of other threads
}

func newThreads(n int) *threads {
	return &threads{m: newLRU[*thread](n), chatter: newLRU[*thread](min(n, maxChatterThreads))}
}

// add records a message of a thread and returns the thread's text so far.
func (t *threads) add(channel, ts string, isRoot bool, text string, private bool) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := channel + ":" + ts
	th, ok := t.m.get(key)
	if !ok {
		th = &thread{private: private}
		if c, ok := t.chatter.get(key); ok {
			th.root, th.text = c.root, c.text // a mention answered in a thread seen before
		}
		t.m.put(key, th)
	}
	if isRoot {
		th.root = strings.Clone(cutBytes(text, maxRootText))
		th.text = text + "\n" + th.text
	} else {
		th.text += "\n" + text
	}
	if len(th.text) > maxThreadText {
		th.text = strings.Clone(tailBytes(th.text, maxThreadText))
	}
	return th.text
}

// addChatter records the first message of a thread in a channel the bot
// does not answer in, so that a mention there without text can be answered
// for it. Only the start of the message is kept.
func (t *threads) addChatter(channel, ts, text string, private bool) {
	root := strings.Clone(cutBytes(text, maxRootText))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.chatter.put(channel+":"+ts, &thread{root: root, text: root, private: private})
}

func (t *threads) get(channel, ts string) (thread, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := channel + ":" + ts
	th, ok := t.m.get(key)
	if !ok {
		if th, ok = t.chatter.get(key); !ok {
			return thread{}, false
		}
	}
	return *th, true
}
