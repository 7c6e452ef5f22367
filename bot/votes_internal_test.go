package bot

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/incidentbot/incidentbot/store"
)

func feedback(user, caseID string, v store.Vote, at time.Time, query string) store.Feedback {
	return store.Feedback{Time: at, Team: "T1", Channel: "C1", Message: "1.1", User: user, CaseID: caseID, Vote: v, Query: query}
}

const crashloop = "[FIRING:1] KubePodCrashLooping (prod payments)\nPod payments-7d9f restarted 5 times"

// TestVotesReplace: a reload from the store keeps the votes cast here that
// the store may not have yet, takes a vote's newer state from either side,
// and drops votes from before the window.
func TestVotesReplace(t *testing.T) {
	now := time.Now()
	v := newVotes()
	v.add(feedback("U1", "a", store.NotRelevant, now, crashloop))
	// The store does not have U1's vote yet; it has U2's, and an old one.
	v.replace([]store.Feedback{
		feedback("U2", "a", store.NotRelevant, now.Add(-time.Minute), crashloop),
		feedback("U3", "a", store.Helpful, now.Add(-48*time.Hour), crashloop),
	}, now.Add(-24*time.Hour), now)
	if got := v.boosts("C1", crashloop, now.Add(-24*time.Hour)); len(got) != 1 || got[0].NotRelevant != 2 || got[0].Helpful != 0 {
		t.Errorf("boosts = %+v, want case a with the two recent not-relevant votes", got)
	}
	// U1 changed their mind on another replica; the store has it later.
	v.replace([]store.Feedback{feedback("U1", "a", store.Helpful, now.Add(time.Second), crashloop)}, now.Add(-24*time.Hour), now)
	if got := v.boosts("C1", crashloop, now.Add(-24*time.Hour)); len(got) != 1 || got[0].Helpful != 1 || got[0].NotRelevant != 0 {
		t.Errorf("boosts after the vote changed = %+v, want one helpful", got)
	}
	// Votes cast here longer than localKeep ago are the store's to give.
	later := now.Add(3 * localKeep)
	v.replace(nil, later.Add(-24*time.Hour), later)
	if got := v.boosts("C1", crashloop, later.Add(-24*time.Hour)); len(got) != 0 {
		t.Errorf("boosts with an empty store and only an old local vote = %+v, want none", got)
	}
}

// TestPrivateVotesStayInTheirChannel: a vote cast in a private channel
// steers replies in that channel only.
func TestPrivateVotesStayInTheirChannel(t *testing.T) {
	now := time.Now()
	v := newVotes()
	private := feedback("U1", "a", store.NotRelevant, now, crashloop)
	private.Channel, private.Private = "G1", true
	v.replace([]store.Feedback{private}, now.Add(-time.Hour), now)
	if got := v.boosts("G1", crashloop, now.Add(-time.Hour)); len(got) != 1 {
		t.Errorf("in its own channel: %+v, want the vote", got)
	}
	if got := v.boosts("C1", crashloop, now.Add(-time.Hour)); len(got) != 0 {
		t.Errorf("in another channel: %+v, want none", got)
	}
	local := feedback("U2", "b", store.Helpful, now, crashloop)
	local.Channel, local.Private = "G1", true
	v.add(local)
	if got := v.boosts("C1", crashloop, now.Add(-time.Hour)); len(got) != 0 {
		t.Errorf("a private vote cast here, in another channel: %+v, want none", got)
	}
}

// BenchmarkVoteBoosts is the cost votes add to a reply: counting the votes
// on texts similar to an alert, with maxVotes votes on 1,000 texts in
// memory.
func BenchmarkVoteBoosts(b *testing.B) {
	now := time.Now()
	var rows []store.Feedback
	for i := range maxVotes {
		text := fmt.Sprintf("[FIRING:%d] Service%dLatencyHigh (prod svc-%d)\np99 latency on checkout-%d above %d ms, upstream timeouts from db-%d",
			i%7, i%1000, i%1000, i%1000, 500+i%900, i%13)
		rows = append(rows, feedback(fmt.Sprintf("U%d", i), fmt.Sprintf("case-%d", i%50), store.Helpful, now, text))
	}
	v := newVotes()
	v.replace(rows, now.Add(-time.Hour), now)
	alert := "[FIRING:2] Service42LatencyHigh (prod svc-42)\np99 latency on checkout-42 above 900 ms, upstream timeouts from db-3"
	if got := v.boosts("C1", alert, now.Add(-time.Hour)); len(got) == 0 {
		b.Fatal("the benchmark's alert matches no voted text")
	}
	b.ReportAllocs()
	for b.Loop() {
		v.boosts("C1", alert, now.Add(-time.Hour))
	}
}

// voteRows is a VoteReader that returns what it was last given, and
// records which workspace it was asked for.
type voteRows struct {
	mu    sync.Mutex
	rows  []store.Feedback
	teams []string
}

func (r *voteRows) Votes(_ context.Context, team string, since time.Time, limit int) ([]store.Feedback, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.teams = append(r.teams, team)
	return r.rows, nil
}

// TestVotesRefreshed: votes cast on other replicas reach this one's
// replies within VoteRefresh, on a fake clock.
func TestVotesRefreshed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &voteRows{}
		b := &Bot{opts: Options{Votes: r, VoteRefresh: 30 * time.Second, VoteWindow: 24 * time.Hour},
			votes: newVotes(), log: slog.New(slog.DiscardHandler), teamID: "T1"}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go b.refreshVotes(ctx)
		r.mu.Lock()
		r.rows = []store.Feedback{feedback("U1", "a", store.NotRelevant, time.Now(), crashloop)}
		r.mu.Unlock()
		since := time.Now().Add(-time.Hour)
		time.Sleep(29 * time.Second)
		synctest.Wait()
		if got := b.votes.boosts("C1", crashloop, since); len(got) != 0 {
			t.Errorf("votes before the refresh: %+v", got)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := b.votes.boosts("C1", crashloop, since); len(got) != 1 || got[0].NotRelevant != 1 {
			t.Errorf("votes after the refresh: %+v, want the other replica's vote", got)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.teams) != 1 || r.teams[0] != "T1" {
			t.Errorf("votes read for workspaces %q, want T1 once", r.teams)
		}
	})
}
