// Package storetest is the contract suite that every store.Store
// implementation passes: one body of tests, run from each implementation's
// own tests, as litestream does for its replica clients.
package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/incidentbot/incidentbot/store"
)

// FakeClock is a clock that only moves when told to. The suite uses it to
// expire claims and leases without waiting.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// clockStart is where every fake clock starts.
var clockStart = time.Date(2025, 3, 10, 9, 0, 0, 0, time.UTC)

var clocks sync.Map // *testing.T -> *FakeClock

// Clock returns the fake clock of test t, the same one each call. The open
// function given to Run must build its store on Clock(t).Now, through the
// implementation's clock option.
func Clock(t *testing.T) *FakeClock {
	if c, ok := clocks.Load(t); ok {
		return c.(*FakeClock)
	}
	c, loaded := clocks.LoadOrStore(t, &FakeClock{now: clockStart})
	if !loaded {
		t.Cleanup(func() { clocks.Delete(t) })
	}
	return c.(*FakeClock)
}

// Run runs the contract suite. Each subtest calls open once for a new,
// empty store whose clock is Clock(t).Now; Run closes the store when the
// subtest ends, before the cleanups that open registered run.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"SuggestionRoundTrip", testSuggestionRoundTrip},
		{"SuggestionIdempotent", testSuggestionIdempotent},
		{"SuggestionConcurrent", testSuggestionConcurrent},
		{"SuggestionsRange", testSuggestionsRange},
		{"SuggestionWithoutKey", testSuggestionWithoutKey},
		{"FeedbackVotes", testFeedbackVotes},
		{"FeedbackConcurrent", testFeedbackConcurrent},
		{"FeedbackRange", testFeedbackRange},
		{"FeedbackInvalidVote", testFeedbackInvalidVote},
		{"Votes", testVotes},
		{"Share", testShare},
		{"TextNotUTF8", testTextNotUTF8},
		{"Reply", testReply},
		{"ClaimReply", testClaimReply},
		{"ClaimReplyConcurrent", testClaimReplyConcurrent},
		{"Claim", testClaim},
		{"ClaimConcurrent", testClaimConcurrent},
		{"ClaimBadTTL", testClaimBadTTL},
		{"Digest", testDigest},
		{"DigestConcurrent", testDigestConcurrent},
		{"DigestMarkWithoutClaim", testDigestMarkWithoutClaim},
		{"InboxPut", testInboxPut},
		{"InboxPutConcurrent", testInboxPutConcurrent},
		{"InboxOrphans", testInboxOrphans},
		{"InboxOrphansOrder", testInboxOrphansOrder},
		{"InboxRenew", testInboxRenew},
		{"InboxOrphansConcurrent", testInboxOrphansConcurrent},
		{"InboxBadArgs", testInboxBadArgs},
		{"Purge", testPurge},
		{"PurgeInbox", testPurgeInbox},
		{"InboxPurge", testInboxPurge},
		{"Ping", testPing},
		{"TeamCaseRoundTrip", testTeamCaseRoundTrip},
		{"TeamCaseReplace", testTeamCaseReplace},
		{"TeamCaseDelete", testTeamCaseDelete},
		{"TeamCaseRejected", testTeamCaseRejected},
		{"TeamCaseConcurrent", testTeamCaseConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

// at returns a time n milliseconds after a fixed instant, in a zone that is
// not UTC, so that the suite checks times come back in UTC.
func at(ms int) time.Time {
	return time.Date(2025, 3, 3, 12, 0, 0, 0, time.FixedZone("KST", 9*3600)).Add(time.Duration(ms) * time.Millisecond)
}

func suggestion(key string, t time.Time) store.Suggestion {
	return store.Suggestion{
		Key:        key,
		Time:       t,
		Channel:    "C123",
		Thread:     "1700000000.000100",
		Source:     store.SourceAlert,
		Lang:       "en",
		Symptoms:   []string{"latency", "5xx"},
		Components: []string{"postgres"},
		Cases:      []store.ScoredCase{{CaseID: "pg-conn-exhaustion", Score: 3.25}, {CaseID: "lb-timeout", Score: 1.5}},
	}
}

// inUTC returns s as the store gives it back: in UTC.
func inUTC(s store.Suggestion) store.Suggestion {
	s.Time = s.Time.UTC()
	return s
}

func keys(ss []store.Suggestion) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Key)
	}
	return out
}

func mustSuggestions(t *testing.T, s store.Store, from, to time.Time) []store.Suggestion {
	t.Helper()
	got, err := s.Suggestions(t.Context(), from, to)
	if err != nil {
		t.Fatalf("Suggestions: %v", err)
	}
	return got
}

func mustFeedback(t *testing.T, s store.Store, from, to time.Time) []store.Feedback {
	t.Helper()
	got, err := s.Feedback(t.Context(), from, to)
	if err != nil {
		t.Fatalf("Feedback: %v", err)
	}
	return got
}

func testSuggestionRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	full := suggestion("C123:1700000000.000100", at(123))
	full.Private = true
	full.Lang = "ko"
	full.Source = store.SourceMention
	bare := store.Suggestion{Key: "C9:1", Time: at(456), Symptoms: []string{}}
	for _, sg := range []store.Suggestion{full, bare} {
		if err := s.RecordSuggestion(ctx, sg); err != nil {
			t.Fatalf("RecordSuggestion(%s): %v", sg.Key, err)
		}
	}
	got := mustSuggestions(t, s, at(0), at(1000))
	bare.Symptoms = nil // empty lists come back nil
	want := []store.Suggestion{inUTC(full), inUTC(bare)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Suggestions =\n%+v\nwant\n%+v", got, want)
	}
	for _, g := range got {
		if g.Time.Location() != time.UTC {
			t.Errorf("suggestion %s time is in %v, want UTC", g.Key, g.Time.Location())
		}
	}
}

func testSuggestionIdempotent(t *testing.T, s store.Store) {
	ctx := t.Context()
	first := suggestion("C1:1", at(1))
	again := suggestion("C1:1", at(2))
	again.Lang = "ko"
	for _, sg := range []store.Suggestion{first, again, first} {
		if err := s.RecordSuggestion(ctx, sg); err != nil {
			t.Fatalf("RecordSuggestion: %v", err)
		}
	}
	got := mustSuggestions(t, s, at(0), at(1000))
	if want := []store.Suggestion{inUTC(first)}; !reflect.DeepEqual(got, want) {
		t.Errorf("after recording one key three times, Suggestions = %+v, want only the first %+v", got, want)
	}
}

// parallel runs fn(i) for i in [0, n) in n goroutines released together.
func parallel(n int, fn func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

func testSuggestionConcurrent(t *testing.T, s store.Store) {
	parallel(50, func(i int) {
		if err := s.RecordSuggestion(t.Context(), suggestion("C1:same", at(i))); err != nil {
			t.Errorf("RecordSuggestion %d: %v", i, err)
		}
	})
	if got := mustSuggestions(t, s, at(-1000), at(1000)); len(got) != 1 {
		t.Errorf("50 goroutines recording one key left %d rows, want 1", len(got))
	}
}

func testSuggestionsRange(t *testing.T, s store.Store) {
	ctx := t.Context()
	from, to := at(1000), at(2000)
	for key, tm := range map[string]time.Time{
		"before": from.Add(-time.Millisecond),
		"from":   from,
		"middle": at(1500),
		"last":   to.Add(-time.Millisecond),
		"to":     to,
	} {
		if err := s.RecordSuggestion(ctx, suggestion(key, tm)); err != nil {
			t.Fatalf("RecordSuggestion(%s): %v", key, err)
		}
	}
	if got, want := keys(mustSuggestions(t, s, from, to)), []string{"from", "middle", "last"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Suggestions in [from, to) = %q, want %q, oldest first", got, want)
	}
	if got := mustSuggestions(t, s, to.Add(time.Hour), to.Add(2*time.Hour)); got != nil {
		t.Errorf("Suggestions in an empty range = %+v, want nil", got)
	}
}

func testSuggestionWithoutKey(t *testing.T, s store.Store) {
	if err := s.RecordSuggestion(t.Context(), suggestion("", at(0))); err == nil {
		t.Error("RecordSuggestion with an empty key succeeded, want an error")
	}
}

func vote(user, caseID string, v store.Vote, ms int) store.Feedback {
	return store.Feedback{
		Time: at(ms), Channel: "C123", Message: "1700000001.000200",
		User: user, CaseID: caseID, Vote: v, Query: "p99 latency up, 502s from api",
	}
}

func record(t *testing.T, s store.Store, f store.Feedback) bool {
	t.Helper()
	counted, err := s.RecordFeedback(t.Context(), f)
	if err != nil {
		t.Fatalf("RecordFeedback(%s, %s, %s): %v", f.User, f.CaseID, f.Vote, err)
	}
	return counted
}

func counts(t *testing.T, s store.Store, caseID string) [2]int {
	t.Helper()
	h, n, err := s.CaseFeedback(t.Context(), caseID)
	if err != nil {
		t.Fatalf("CaseFeedback(%s): %v", caseID, err)
	}
	return [2]int{h, n}
}

func testFeedbackVotes(t *testing.T, s store.Store) {
	if !record(t, s, vote("U1", "pg", store.Helpful, 1)) {
		t.Error("first vote not counted")
	}
	if record(t, s, vote("U1", "pg", store.Helpful, 2)) {
		t.Error("repeat of the same vote counted again")
	}
	if got := counts(t, s, "pg"); got != [2]int{1, 0} {
		t.Errorf("after one vote and its repeat, CaseFeedback = %v, want [1 0]", got)
	}
	changed := vote("U1", "pg", store.NotRelevant, 3)
	changed.Private = true
	changed.Query = "changed my mind"
	if !record(t, s, changed) {
		t.Error("changed vote not counted")
	}
	if got := counts(t, s, "pg"); got != [2]int{0, 1} {
		t.Errorf("after the vote changed, CaseFeedback = %v, want [0 1]", got)
	}
	want := changed
	want.Time = want.Time.UTC()
	if got := mustFeedback(t, s, at(0), at(1000)); !reflect.DeepEqual(got, []store.Feedback{want}) {
		t.Errorf("Feedback = %+v, want only the changed vote %+v", got, want)
	}

	// Other users, messages, channels and cases each get their own vote.
	other := []store.Feedback{vote("U2", "pg", store.Helpful, 4), vote("U3", "pg", store.Helpful, 5), vote("U1", "lb", store.Helpful, 6)}
	other = append(other, vote("U1", "pg", store.Helpful, 7), vote("U1", "pg", store.Helpful, 8))
	other[3].Message = "1700000002.000300"
	other[4].Channel = "C456"
	for _, f := range other {
		if !record(t, s, f) {
			t.Errorf("vote %+v not counted", f)
		}
	}
	if got := counts(t, s, "pg"); got != [2]int{4, 1} {
		t.Errorf("CaseFeedback(pg) = %v, want [4 1]", got)
	}
	if got := counts(t, s, "lb"); got != [2]int{1, 0} {
		t.Errorf("CaseFeedback(lb) = %v, want [1 0]", got)
	}
	if got := counts(t, s, "none"); got != [2]int{0, 0} {
		t.Errorf("CaseFeedback(none) = %v, want [0 0]", got)
	}
	if got := mustFeedback(t, s, at(0), at(1000)); len(got) != 6 {
		t.Errorf("Feedback has %d votes, want 6", len(got))
	}
}

func testFeedbackConcurrent(t *testing.T, s store.Store) {
	var mu sync.Mutex
	counted := 0
	parallel(20, func(i int) {
		ok, err := s.RecordFeedback(t.Context(), vote("U1", "pg", store.Helpful, i))
		if err != nil {
			t.Errorf("RecordFeedback %d: %v", i, err)
		}
		if ok {
			mu.Lock()
			counted++
			mu.Unlock()
		}
	})
	if counted != 1 {
		t.Errorf("20 goroutines casting one vote: %d counted, want 1", counted)
	}
	if got := counts(t, s, "pg"); got != [2]int{1, 0} {
		t.Errorf("CaseFeedback = %v, want [1 0]", got)
	}
}

func testFeedbackRange(t *testing.T, s store.Store) {
	from, to := at(1000), at(2000)
	for user, ms := range map[string]int{"before": 999, "from": 1000, "middle": 1500, "last": 1999, "to": 2000} {
		record(t, s, vote(user, "pg", store.Helpful, ms))
	}
	var got []string
	for _, f := range mustFeedback(t, s, from, to) {
		got = append(got, f.User)
		if f.Time.Location() != time.UTC {
			t.Errorf("feedback time is in %v, want UTC", f.Time.Location())
		}
	}
	if want := []string{"from", "middle", "last"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Feedback in [from, to) by %q, want %q, oldest first", got, want)
	}
}

func testFeedbackInvalidVote(t *testing.T, s store.Store) {
	_, err := s.RecordFeedback(t.Context(), vote("U1", "pg", "meh", 0))
	if err == nil {
		t.Error(`RecordFeedback with vote "meh" succeeded, want an error`)
	}
	if !errors.Is(err, store.ErrRejected) {
		t.Errorf("RecordFeedback with vote %q: %v, want it marked store.ErrRejected (retrying will not help)", "meh", err)
	}
}

// testTextNotUTF8: text cut in the middle of a Korean syllable, or carrying
// a NUL, is stored (made valid), not refused with the whole vote.
func testTextNotUTF8(t *testing.T, s store.Store) {
	korean := "결제 API 타임아웃"
	cut := korean[:len(korean)-1] // the last syllable without its last byte
	f := vote("U1", "pg", store.Helpful, 1)
	f.Query = "\xbc" + cut + "\x00 end"
	if _, err := s.RecordFeedback(t.Context(), f); err != nil {
		t.Fatalf("RecordFeedback with a cut Korean query: %v", err)
	}
	got := mustFeedback(t, s, at(0), at(1000))
	if len(got) != 1 {
		t.Fatalf("Feedback = %d votes, want the one recorded", len(got))
	}
	q := got[0].Query
	if !utf8.ValidString(q) || !strings.Contains(q, "결제 API 타임") || strings.ContainsRune(q, 0) || !strings.HasSuffix(q, " end") {
		t.Errorf("Query stored as %q, want valid UTF-8 keeping the Korean text and the rest, without NUL", q)
	}
	sg := suggestion("C123:1.2", at(5))
	sg.Thread = "17000\xff"
	if err := s.RecordSuggestion(t.Context(), sg); err != nil {
		t.Fatalf("RecordSuggestion with a thread that is not UTF-8: %v", err)
	}
	if got := mustSuggestions(t, s, at(0), at(1000)); len(got) != 1 || !utf8.ValidString(got[0].Thread) {
		t.Errorf("Suggestions = %+v, want the one recorded, valid UTF-8", got)
	}
}

func testReply(t *testing.T, s store.Store) {
	ctx := t.Context()
	if _, ok, err := s.GetReply(ctx, "C1", "1.1"); err != nil || ok {
		t.Fatalf("GetReply before any reply = ok %v, err %v; want false, nil", ok, err)
	}
	r := store.Reply{Channel: "C1", Thread: "1.1", ReplyTS: "1.2", Lang: "en", CaseIDs: []string{"pg", "lb"}, Updated: at(10),
		Text: "[FIRING:1] 결제 API 응답 지연\x00\xff p99 3200ms"}
	if err := s.PutReply(ctx, r); err != nil {
		t.Fatalf("PutReply: %v", err)
	}
	r.Text = "[FIRING:1] 결제 API 응답 지연\uFFFD p99 3200ms" // kept as CleanText makes it
	other := store.Reply{Channel: "C1", Thread: "2.1", ReplyTS: "2.2", Lang: "ko", Updated: at(11)}
	if err := s.PutReply(ctx, other); err != nil {
		t.Fatalf("PutReply: %v", err)
	}
	check := func(want store.Reply) {
		t.Helper()
		got, ok, err := s.GetReply(ctx, want.Channel, want.Thread)
		want.Updated = want.Updated.UTC()
		if err != nil || !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("GetReply(%s, %s) = %+v, %v, %v; want %+v, true, nil", want.Channel, want.Thread, got, ok, err, want)
		}
	}
	check(r)
	check(other)
	r.ReplyTS, r.Lang, r.CaseIDs, r.Updated, r.Text = "1.3", "ko", []string{"dns"}, at(20), "the thread so far"
	if err := s.PutReply(ctx, r); err != nil {
		t.Fatalf("PutReply again: %v", err)
	}
	check(r)
}

// testVotes: a workspace's votes come back newest first, only its own,
// only since the given time, at most the limit, each vote as it is now.
func testVotes(t *testing.T, s store.Store) {
	ctx := t.Context()
	if got, err := s.Votes(ctx, "T1", at(0), 10); err != nil || got != nil {
		t.Fatalf("Votes with none recorded = %+v, %v; want nil, nil", got, err)
	}
	var want []store.Feedback
	for i, user := range []string{"U1", "U2", "U3", "U4"} {
		f := vote(user, "pg", store.Helpful, 10*(i+1))
		f.Team = "T1"
		record(t, s, f)
		f.Time = f.Time.UTC()
		want = append([]store.Feedback{f}, want...)
	}
	other := vote("U9", "pg", store.NotRelevant, 25)
	other.Team = "T2"
	record(t, s, other)
	none := vote("U8", "pg", store.NotRelevant, 26) // recorded without a workspace
	record(t, s, none)

	got, err := s.Votes(ctx, "T1", at(0), 10)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Votes(T1) = %+v, %v; want the four T1 votes newest first %+v", got, err, want)
	}
	if got, err := s.Votes(ctx, "T1", at(0), 2); err != nil || !reflect.DeepEqual(got, want[:2]) {
		t.Errorf("Votes(T1, limit 2) = %+v, %v; want the newest two", got, err)
	}
	if got, err := s.Votes(ctx, "T1", at(30), 10); err != nil || !reflect.DeepEqual(got, want[:2]) {
		t.Errorf("Votes(T1, since 30ms) = %+v, %v; want the two cast at or after it", got, err)
	}
	if got, err := s.Votes(ctx, "T1", at(0), 0); err != nil || got != nil {
		t.Errorf("Votes with limit 0 = %+v, %v; want nil, nil", got, err)
	}
	if got, err := s.Votes(ctx, "T2", at(0), 10); err != nil || len(got) != 1 || got[0].User != "U9" || got[0].Team != "T2" {
		t.Errorf("Votes(T2) = %+v, %v; want only U9's vote", got, err)
	}
	// A vote changed is one vote, as it is now.
	changed := vote("U1", "pg", store.NotRelevant, 50)
	changed.Team = "T1"
	record(t, s, changed)
	got, err = s.Votes(ctx, "T1", at(0), 10)
	if err != nil || len(got) != 4 || got[0].User != "U1" || got[0].Vote != store.NotRelevant {
		t.Errorf("Votes(T1) after U1 changed their vote = %+v, %v; want four votes, U1's not relevant first", got, err)
	}
}

// testShare: a share is read back as it was put, replaced by a put with
// its id, and missing ids are not an error.
func testShare(t *testing.T, s store.Store) {
	ctx := t.Context()
	if _, ok, err := s.GetShare(ctx, "nope"); err != nil || ok {
		t.Fatalf("GetShare of a missing id = %v, %v; want false, nil", ok, err)
	}
	sh := store.Share{ID: "a1b2", Channel: "C1", Thread: "1.1", Private: true, Text: "결제 API 지연\x00", Created: at(5)}
	if err := s.PutShare(ctx, sh); err != nil {
		t.Fatalf("PutShare: %v", err)
	}
	got, ok, err := s.GetShare(ctx, "a1b2")
	want := sh
	want.Text, want.Created = "결제 API 지연", sh.Created.UTC()
	if err != nil || !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("GetShare = %+v, %v, %v; want %+v", got, ok, err, want)
	}
	sh.Private, sh.Text = false, "replaced"
	if err := s.PutShare(ctx, sh); err != nil {
		t.Fatalf("PutShare again: %v", err)
	}
	if got, _, err := s.GetShare(ctx, "a1b2"); err != nil || got.Text != "replaced" || got.Private {
		t.Errorf("GetShare after a replace = %+v, %v", got, err)
	}
}

func claimReply(t *testing.T, s store.Store, owner string, ttl time.Duration) bool {
	t.Helper()
	ok, err := s.ClaimReply(t.Context(), "C1", "1.1", owner, ttl)
	if err != nil {
		t.Fatalf("ClaimReply(%s): %v", owner, err)
	}
	return ok
}

func testClaimReply(t *testing.T, s store.Store) {
	clock := Clock(t)
	if !claimReply(t, s, "a", time.Minute) {
		t.Fatal("first ClaimReply lost")
	}
	if claimReply(t, s, "b", time.Minute) {
		t.Error("second owner won a live reply claim")
	}
	if !claimReply(t, s, "a", time.Minute) {
		t.Error("the owner of a live reply claim could not claim again")
	}
	if ok, err := s.ClaimReply(t.Context(), "C1", "other", "b", time.Minute); err != nil || !ok {
		t.Errorf("ClaimReply on another thread = %v, %v; want true", ok, err)
	}
	clock.Advance(time.Minute - time.Millisecond)
	if claimReply(t, s, "b", time.Minute) {
		t.Error("second owner won a reply claim before it expired")
	}
	clock.Advance(time.Millisecond)
	if !claimReply(t, s, "b", time.Minute) {
		t.Fatal("second owner could not take an expired reply claim (is open building the store on storetest.Clock(t).Now?)")
	}

	// Once a reply is recorded, nobody claims the thread again.
	if err := s.PutReply(t.Context(), store.Reply{Channel: "C1", Thread: "1.1", ReplyTS: "1.2", Updated: at(0)}); err != nil {
		t.Fatalf("PutReply: %v", err)
	}
	clock.Advance(time.Hour)
	for _, owner := range []string{"a", "b"} {
		if claimReply(t, s, owner, time.Minute) {
			t.Errorf("%s claimed a thread that has a reply", owner)
		}
	}
}

// winners runs claim for n owners at once and returns how many won.
func winners(t *testing.T, n int, claim func(owner string) (bool, error)) int {
	var mu sync.Mutex
	won := 0
	parallel(n, func(i int) {
		ok, err := claim(fmt.Sprintf("owner-%d", i))
		if err != nil {
			t.Errorf("claim by owner-%d: %v", i, err)
		}
		if ok {
			mu.Lock()
			won++
			mu.Unlock()
		}
	})
	return won
}

func testClaimReplyConcurrent(t *testing.T, s store.Store) {
	for i := range 5 {
		thread := fmt.Sprintf("%d.1", i)
		won := winners(t, 10, func(owner string) (bool, error) {
			return s.ClaimReply(t.Context(), "C1", thread, owner, time.Minute)
		})
		if won != 1 {
			t.Errorf("thread %s: %d of 10 owners won ClaimReply, want 1", thread, won)
		}
	}
}

func testClaim(t *testing.T, s store.Store) {
	ctx, clock := t.Context(), Clock(t)
	claim := func(key, owner string) bool {
		t.Helper()
		ok, err := s.Claim(ctx, key, owner, time.Minute)
		if err != nil {
			t.Fatalf("Claim(%s, %s): %v", key, owner, err)
		}
		return ok
	}
	if !claim("Ev1", "a") {
		t.Fatal("first Claim lost")
	}
	if claim("Ev1", "b") {
		t.Error("second owner won a live claim")
	}
	if claim("Ev1", "a") {
		t.Error("a repeated Claim by the same owner won: a claim is once-only")
	}
	if !claim("Ev2", "b") {
		t.Error("Claim on another key lost")
	}
	clock.Advance(time.Minute - time.Millisecond)
	if claim("Ev1", "b") {
		t.Error("a claim was taken before it expired")
	}
	clock.Advance(time.Millisecond)
	if !claim("Ev1", "b") {
		t.Fatal("an expired claim could not be taken again (is open building the store on storetest.Clock(t).Now?)")
	}
	if claim("Ev1", "a") {
		t.Error("a claim taken again was won a second time")
	}
}

func testClaimConcurrent(t *testing.T, s store.Store) {
	for i := range 5 {
		key := fmt.Sprintf("Ev%d", i)
		won := winners(t, 10, func(owner string) (bool, error) {
			return s.Claim(t.Context(), key, owner, time.Minute)
		})
		if won != 1 {
			t.Errorf("key %s: %d of 10 owners won Claim, want 1", key, won)
		}
	}
}

func testClaimBadTTL(t *testing.T, s store.Store) {
	ctx := t.Context()
	if _, err := s.Claim(ctx, "Ev1", "a", 0); err == nil {
		t.Error("Claim with ttl 0 succeeded, want an error")
	}
	if _, err := s.ClaimReply(ctx, "C1", "1.1", "a", -time.Second); err == nil {
		t.Error("ClaimReply with a negative ttl succeeded, want an error")
	}
	if _, err := s.ClaimDigest(ctx, "C1", "2025-W10", "a", 0); err == nil {
		t.Error("ClaimDigest with lease 0 succeeded, want an error")
	}
}

func claimDigest(t *testing.T, s store.Store, owner string) bool {
	t.Helper()
	ok, err := s.ClaimDigest(t.Context(), "C1", "2025-W10", owner, 10*time.Minute)
	if err != nil {
		t.Fatalf("ClaimDigest(%s): %v", owner, err)
	}
	return ok
}

func testDigest(t *testing.T, s store.Store) {
	ctx, clock := t.Context(), Clock(t)
	if _, posted, err := s.DigestPosted(ctx, "C1", "2025-W10"); err != nil || posted {
		t.Fatalf("DigestPosted before any claim = %v, %v; want false, nil", posted, err)
	}
	if !claimDigest(t, s, "a") {
		t.Fatal("first ClaimDigest lost")
	}
	r, posted, err := s.DigestPosted(ctx, "C1", "2025-W10")
	if err != nil || posted || r.ClaimedBy != "a" || !r.ClaimedAt.Equal(clock.Now()) || r.PostedAt != nil {
		t.Errorf("DigestPosted after a claim = %+v, %v, %v; want claimed by a at %v, not posted", r, posted, err, clock.Now())
	}
	if claimDigest(t, s, "b") {
		t.Error("another owner won a live digest lease")
	}
	if !claimDigest(t, s, "a") {
		t.Error("the lease holder could not renew its lease")
	}
	clock.Advance(10*time.Minute - time.Millisecond)
	if claimDigest(t, s, "b") {
		t.Error("another owner won a renewed lease before it expired")
	}
	clock.Advance(time.Millisecond)
	if !claimDigest(t, s, "b") {
		t.Fatal("another owner could not take an expired lease (is open building the store on storetest.Clock(t).Now?)")
	}
	if claimDigest(t, s, "a") {
		t.Error("the former holder won back a lease that b holds")
	}

	postedAt := at(5000)
	if err := s.MarkDigestPosted(ctx, "C1", "2025-W10", "b", "1700000009.000900", postedAt); err != nil {
		t.Fatalf("MarkDigestPosted: %v", err)
	}
	check := func() {
		t.Helper()
		r, posted, err := s.DigestPosted(ctx, "C1", "2025-W10")
		if err != nil || !posted || r.Target != "C1" || r.Week != "2025-W10" || r.ClaimedBy != "b" || r.MessageTS != "1700000009.000900" ||
			r.PostedAt == nil || !r.PostedAt.Equal(postedAt) || r.PostedAt.Location() != time.UTC {
			t.Errorf("DigestPosted = %+v (posted at %v), %v, %v; want posted by b as 1700000009.000900 at %v UTC", r, r.PostedAt, posted, err, postedAt)
		}
	}
	check()
	clock.Advance(24 * time.Hour)
	for _, owner := range []string{"a", "b", "c"} {
		if claimDigest(t, s, owner) {
			t.Errorf("%s claimed a posted digest", owner)
		}
	}
	// The first mark wins.
	if err := s.MarkDigestPosted(ctx, "C1", "2025-W10", "a", "1700000010.000100", at(6000)); err != nil {
		t.Fatalf("MarkDigestPosted again: %v", err)
	}
	check()
	if _, posted, _ := s.DigestPosted(ctx, "C1", "2025-W11"); posted {
		t.Error("another week is posted")
	}
}

func testDigestConcurrent(t *testing.T, s store.Store) {
	for week := range 10 {
		w := fmt.Sprintf("2025-W%02d", week+1)
		won := winners(t, 2, func(owner string) (bool, error) {
			return s.ClaimDigest(t.Context(), "C1", w, owner, 10*time.Minute)
		})
		if won != 1 {
			t.Errorf("week %s: %d of 2 owners won ClaimDigest, want 1", w, won)
		}
	}
}

func testDigestMarkWithoutClaim(t *testing.T, s store.Store) {
	ctx := t.Context()
	if err := s.MarkDigestPosted(ctx, "C2", "2025-W10", "a", "1.1", at(0)); err != nil {
		t.Fatalf("MarkDigestPosted: %v", err)
	}
	if r, posted, err := s.DigestPosted(ctx, "C2", "2025-W10"); err != nil || !posted || r.ClaimedBy != "a" || r.MessageTS != "1.1" {
		t.Errorf("DigestPosted = %+v, %v, %v; want posted by a as 1.1", r, posted, err)
	}
	if claimDigest(t, s, "a") != true {
		t.Error("a digest of another target could not be claimed")
	}
	if ok, err := s.ClaimDigest(ctx, "C2", "2025-W10", "b", time.Minute); err != nil || ok {
		t.Errorf("ClaimDigest on a posted digest = %v, %v; want false", ok, err)
	}
}

// payload is an envelope payload as Slack might send it, followed by bytes
// that are not UTF-8, which the store must keep as they are.
var payload = []byte("{\"envelope_id\":\"e1\",\"payload\":{\"event_id\":\"Ev1\"}}\xff\xfe\x00\x80\xc3")

func inboxItem(key, owner string) store.InboxItem {
	return store.InboxItem{Key: key, Kind: "events_api", Payload: payload, Owner: owner}
}

func inboxPut(t *testing.T, s store.Store, item store.InboxItem, lease time.Duration) bool {
	t.Helper()
	ok, err := s.InboxPut(t.Context(), item, lease)
	if err != nil {
		t.Fatalf("InboxPut(%s): %v", item.Key, err)
	}
	return ok
}

func inboxDone(t *testing.T, s store.Store, key string) {
	t.Helper()
	if err := s.InboxDone(t.Context(), key); err != nil {
		t.Fatalf("InboxDone(%s): %v", key, err)
	}
}

func orphans(t *testing.T, s store.Store, owner string, lease time.Duration, limit int) []store.InboxItem {
	t.Helper()
	got, err := s.InboxOrphans(t.Context(), owner, lease, limit)
	if err != nil {
		t.Fatalf("InboxOrphans(%s): %v", owner, err)
	}
	for _, it := range got {
		if it.Received.Location() != time.UTC {
			t.Errorf("inbox item %s received in %v, want UTC", it.Key, it.Received.Location())
		}
	}
	return got
}

func inboxKeys(items []store.InboxItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Key)
	}
	return out
}

func testInboxPut(t *testing.T, s store.Store) {
	clock := Clock(t)
	received := clock.Now()
	if !inboxPut(t, s, inboxItem("Ev1", "r1"), time.Minute) {
		t.Fatal("first InboxPut returned false")
	}
	again := inboxItem("Ev1", "r2")
	again.Payload = []byte("redelivered")
	clock.Advance(time.Second)
	if inboxPut(t, s, again, time.Minute) {
		t.Error("InboxPut of a key put before returned true, want false: a redelivery")
	}
	if !inboxPut(t, s, store.InboxItem{Key: "Ev2", Owner: "r1"}, time.Minute) {
		t.Error("InboxPut of another key, with no kind or payload, returned false")
	}

	// The first put is what is kept, byte for byte.
	clock.Advance(time.Minute)
	want := []store.InboxItem{
		{Key: "Ev1", Kind: "events_api", Payload: payload, Owner: "r3", Received: received},
		{Key: "Ev2", Owner: "r3", Received: received.Add(time.Second)},
	}
	if got := orphans(t, s, "r3", time.Minute, 10); !reflect.DeepEqual(got, want) {
		t.Errorf("InboxOrphans =\n%+v\nwant\n%+v", got, want)
	}

	inboxDone(t, s, "Ev1")
	inboxDone(t, s, "Ev1") // again: no error
	if err := s.InboxDone(t.Context(), "never-put"); err != nil {
		t.Errorf("InboxDone of a key never put: %v, want nil", err)
	}
	if inboxPut(t, s, inboxItem("Ev1", "r1"), time.Minute) {
		t.Error("InboxPut of a done key returned true, want false: done keys still dedupe")
	}
	clock.Advance(time.Hour)
	if got := inboxKeys(orphans(t, s, "r4", time.Minute, 10)); !reflect.DeepEqual(got, []string{"Ev2"}) {
		t.Errorf("InboxOrphans after Ev1 was done = %q, want [Ev2]", got)
	}
}

func testInboxPutConcurrent(t *testing.T, s store.Store) {
	won := winners(t, 50, func(owner string) (bool, error) {
		return s.InboxPut(t.Context(), inboxItem("Ev1", owner), time.Minute)
	})
	if won != 1 {
		t.Errorf("%d of 50 InboxPut calls of one key returned true, want 1", won)
	}
}

func testInboxOrphans(t *testing.T, s store.Store) {
	clock := Clock(t)
	received := clock.Now()
	inboxPut(t, s, inboxItem("Ev1", "r1"), time.Minute)
	if got := orphans(t, s, "r2", time.Minute, 10); got != nil {
		t.Errorf("InboxOrphans under a live lease = %+v, want nil", got)
	}
	clock.Advance(time.Minute - time.Millisecond)
	if got := orphans(t, s, "r2", time.Minute, 10); got != nil {
		t.Errorf("InboxOrphans just before the lease expired = %+v, want nil", got)
	}
	clock.Advance(time.Millisecond)
	want := []store.InboxItem{{Key: "Ev1", Kind: "events_api", Payload: payload, Owner: "r2", Received: received}}
	if got := orphans(t, s, "r2", 2*time.Minute, 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("InboxOrphans after the lease expired =\n%+v\nwant\n%+v (is open building the store on storetest.Clock(t).Now?)", got, want)
	}

	// r2 holds it now, for its own lease.
	if got := orphans(t, s, "r3", time.Minute, 10); got != nil {
		t.Errorf("InboxOrphans right after r2 took the item = %+v, want nil", got)
	}
	clock.Advance(2*time.Minute - time.Millisecond)
	if got := orphans(t, s, "r3", time.Minute, 10); got != nil {
		t.Errorf("InboxOrphans before r2's lease expired = %+v, want nil", got)
	}
	clock.Advance(time.Millisecond)
	want[0].Owner = "r3"
	if got := orphans(t, s, "r3", time.Minute, 10); !reflect.DeepEqual(got, want) {
		t.Errorf("InboxOrphans after r2's lease expired =\n%+v\nwant\n%+v", got, want)
	}

	// Done items are never taken.
	inboxDone(t, s, "Ev1")
	inboxPut(t, s, inboxItem("Ev2", "r1"), time.Minute)
	inboxDone(t, s, "Ev2")
	clock.Advance(24 * time.Hour)
	if got := orphans(t, s, "r4", time.Minute, 10); got != nil {
		t.Errorf("InboxOrphans with every item done = %+v, want nil", got)
	}
}

func testInboxRenew(t *testing.T, s store.Store) {
	clock := Clock(t)
	inboxPut(t, s, inboxItem("Ev1", "r1"), time.Minute)
	inboxPut(t, s, inboxItem("Ev2", "r1"), time.Minute)
	inboxPut(t, s, inboxItem("Ev3", "r2"), time.Minute)
	inboxDone(t, s, "Ev2")
	// r1 lives and renews; r2 has stopped.
	clock.Advance(50 * time.Second)
	n, err := s.InboxRenew(t.Context(), "r1", time.Minute)
	if err != nil || n != 1 {
		t.Fatalf("InboxRenew = %d, %v; want 1 (Ev1; Ev2 is done)", n, err)
	}
	clock.Advance(20 * time.Second)
	got := orphans(t, s, "r3", time.Minute, 10)
	if len(got) != 1 || got[0].Key != "Ev3" {
		t.Errorf("InboxOrphans after r2 stopped renewing = %+v, want only Ev3", got)
	}
	// Now r1 stops and r3 (holding Ev3) renews.
	clock.Advance(50 * time.Second)
	if n, err := s.InboxRenew(t.Context(), "r3", time.Minute); err != nil || n != 1 {
		t.Fatalf("InboxRenew(r3) = %d, %v; want 1", n, err)
	}
	clock.Advance(20 * time.Second)
	if got := orphans(t, s, "r4", time.Minute, 10); len(got) != 1 || got[0].Key != "Ev1" {
		t.Errorf("InboxOrphans after r1 stopped renewing = %+v, want only Ev1", got)
	}
	if _, err := s.InboxRenew(t.Context(), "r1", 0); err == nil {
		t.Error("InboxRenew with a zero lease: no error")
	}
}

func testInboxOrphansOrder(t *testing.T, s store.Store) {
	clock := Clock(t)
	// Received in the order c, a, b (not the keys' order); d is done.
	for _, key := range []string{"c", "a", "d", "b"} {
		inboxPut(t, s, inboxItem(key, "r1"), time.Minute)
		clock.Advance(time.Second)
	}
	inboxDone(t, s, "d")
	clock.Advance(time.Hour)
	for _, limit := range []int{0, -1} {
		if got := orphans(t, s, "r2", time.Minute, limit); got != nil {
			t.Errorf("InboxOrphans with limit %d = %+v, want nil", limit, got)
		}
	}
	for _, want := range [][]string{{"c", "a"}, {"b"}, nil} {
		got := orphans(t, s, "r2", time.Minute, 2)
		if !reflect.DeepEqual(inboxKeys(got), want) {
			t.Errorf("InboxOrphans with limit 2 = %q, want %q, oldest first", inboxKeys(got), want)
		}
	}
}

func testInboxOrphansConcurrent(t *testing.T, s store.Store) {
	clock := Clock(t)
	for i := range 50 {
		inboxPut(t, s, inboxItem(fmt.Sprintf("Ev%02d", i), "dead"), time.Minute)
	}
	clock.Advance(time.Minute)
	var (
		mu    sync.Mutex
		taken = map[string][]string{} // key -> owners that got it
	)
	parallel(10, func(i int) {
		owner := fmt.Sprintf("r%d", i)
		for {
			got, err := s.InboxOrphans(t.Context(), owner, time.Hour, 7)
			if err != nil {
				t.Errorf("InboxOrphans(%s): %v", owner, err)
				return
			}
			if len(got) == 0 {
				return
			}
			mu.Lock()
			for _, it := range got {
				taken[it.Key] = append(taken[it.Key], owner)
				if it.Owner != owner {
					t.Errorf("%s got %s with owner %s", owner, it.Key, it.Owner)
				}
			}
			mu.Unlock()
		}
	})
	if len(taken) != 50 {
		t.Errorf("10 replicas took %d distinct items, want all 50", len(taken))
	}
	for key, owners := range taken {
		if len(owners) != 1 {
			t.Errorf("%s was taken by %q, want one replica", key, owners)
		}
	}
}

func testInboxBadArgs(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, lease := range []time.Duration{0, -time.Second} {
		if _, err := s.InboxPut(ctx, inboxItem("Ev1", "r1"), lease); err == nil {
			t.Errorf("InboxPut with lease %v succeeded, want an error", lease)
		}
		if _, err := s.InboxOrphans(ctx, "r1", lease, 10); err == nil {
			t.Errorf("InboxOrphans with lease %v succeeded, want an error", lease)
		}
	}
	if _, err := s.InboxPut(ctx, inboxItem("", "r1"), time.Minute); err == nil {
		t.Error("InboxPut with an empty key succeeded, want an error")
	}
}

func testPurge(t *testing.T, s store.Store) {
	ctx, clock := t.Context(), Clock(t)
	cut := at(1000)
	old, kept := cut.Add(-time.Millisecond), cut
	for _, sg := range []store.Suggestion{suggestion("old", old), suggestion("kept", kept)} {
		if err := s.RecordSuggestion(ctx, sg); err != nil {
			t.Fatalf("RecordSuggestion: %v", err)
		}
	}
	record(t, s, vote("old", "pg", store.Helpful, 999))
	record(t, s, vote("kept", "pg", store.Helpful, 1000))
	for thread, updated := range map[string]time.Time{"old": old, "kept": kept} {
		if err := s.PutReply(ctx, store.Reply{Channel: "C1", Thread: thread, ReplyTS: "9.9", Updated: updated}); err != nil {
			t.Fatalf("PutReply: %v", err)
		}
	}
	for id, created := range map[string]time.Time{"old": old, "kept": kept} {
		if err := s.PutShare(ctx, store.Share{ID: id, Channel: "C1", Thread: "1.1", Text: "t", Created: created}); err != nil {
			t.Fatalf("PutShare: %v", err)
		}
	}
	// Claims on "expired" expire before the purge; those on "live" do not.
	for _, key := range []string{"expired", "live"} {
		if ok, err := s.Claim(ctx, key, "a", time.Minute); err != nil || !ok {
			t.Fatalf("Claim(%s) = %v, %v", key, ok, err)
		}
		if ok, err := s.ClaimReply(ctx, "C2", key, "a", time.Minute); err != nil || !ok {
			t.Fatalf("ClaimReply(%s) = %v, %v", key, ok, err)
		}
		clock.Advance(time.Minute)
	}
	clock.Advance(-time.Millisecond)
	if ok, err := s.ClaimDigest(ctx, "C1", "2025-W01", "a", time.Minute); err != nil || !ok {
		t.Fatalf("ClaimDigest = %v, %v", ok, err)
	}
	if err := s.MarkDigestPosted(ctx, "C1", "2025-W01", "a", "1.1", old); err != nil {
		t.Fatalf("MarkDigestPosted: %v", err)
	}
	if ok, err := s.ClaimDigest(ctx, "C1", "2025-W02", "a", time.Minute); err != nil || !ok {
		t.Fatalf("ClaimDigest = %v, %v", ok, err)
	}

	n, err := s.Purge(ctx, cut)
	if err != nil {
		t.Fatalf("Purge: %v", err)
	}
	// One old suggestion, vote, reply and share; the expired claim and
	// reply claim.
	if n != 6 {
		t.Errorf("Purge deleted %d rows, want 6", n)
	}
	for id, want := range map[string]bool{"old": false, "kept": true} {
		if _, ok, err := s.GetShare(ctx, id); err != nil || ok != want {
			t.Errorf("GetShare(%s) after Purge = %v, %v; want %v", id, ok, err, want)
		}
	}
	if got := keys(mustSuggestions(t, s, at(-1e6), at(1e6))); !reflect.DeepEqual(got, []string{"kept"}) {
		t.Errorf("suggestions after Purge: %q, want [kept]", got)
	}
	if got := mustFeedback(t, s, at(-1e6), at(1e6)); len(got) != 1 || got[0].User != "kept" {
		t.Errorf("feedback after Purge: %+v, want only the vote by kept", got)
	}
	for thread, want := range map[string]bool{"old": false, "kept": true} {
		if _, ok, err := s.GetReply(ctx, "C1", thread); err != nil || ok != want {
			t.Errorf("GetReply(%s) after Purge = %v, %v; want %v", thread, ok, err, want)
		}
	}
	if ok, err := s.Claim(ctx, "live", "b", time.Minute); err != nil || ok {
		t.Errorf("Claim on a live claim after Purge = %v, %v; want false: Purge keeps live claims", ok, err)
	}
	if ok, err := s.ClaimReply(ctx, "C2", "live", "b", time.Minute); err != nil || ok {
		t.Errorf("ClaimReply on a live claim after Purge = %v, %v; want false: Purge keeps live claims", ok, err)
	}
	if _, posted, err := s.DigestPosted(ctx, "C1", "2025-W01"); err != nil || !posted {
		t.Errorf("DigestPosted after Purge = %v, %v; want the digest record kept", posted, err)
	}
	if r, _, err := s.DigestPosted(ctx, "C1", "2025-W02"); err != nil || r.ClaimedBy != "a" {
		t.Errorf("DigestPosted(W02) after Purge = %+v, %v; want the claimed record kept", r, err)
	}
	if n, err := s.Purge(ctx, cut); err != nil || n != 0 {
		t.Errorf("second Purge = %d, %v; want 0, nil", n, err)
	}
}

// testInboxPurge: the inbox is kept for a short time, done or not, apart
// from the activity's retention; a key purged is new again.
func testInboxPurge(t *testing.T, s store.Store) {
	ctx, clock := t.Context(), Clock(t)
	inboxPut(t, s, inboxItem("old-done", "r1"), time.Minute)
	inboxDone(t, s, "old-done")
	inboxPut(t, s, inboxItem("old-pending", "r1"), time.Minute)
	clock.Advance(time.Hour)
	cut := clock.Now()
	inboxPut(t, s, inboxItem("fresh", "r1"), time.Minute)
	n, err := s.InboxPurge(ctx, cut)
	if err != nil || n != 2 {
		t.Fatalf("InboxPurge = %d, %v; want the 2 events received before the cut", n, err)
	}
	clock.Advance(2 * time.Minute) // every lease has expired
	got, err := s.InboxOrphans(ctx, "r2", time.Minute, 10)
	if err != nil || len(got) != 1 || got[0].Key != "fresh" {
		t.Errorf("InboxOrphans after InboxPurge = %+v, %v; want only fresh", got, err)
	}
	if ok, err := s.InboxPut(ctx, inboxItem("old-done", "r1"), time.Minute); err != nil || !ok {
		t.Errorf("InboxPut of a purged key = %v, %v; want true (new again)", ok, err)
	}
	if n, err := s.InboxPurge(ctx, cut); err != nil || n != 0 {
		t.Errorf("second InboxPurge = %d, %v; want 0, nil", n, err)
	}
}

func testPurgeInbox(t *testing.T, s store.Store) {
	ctx, clock := t.Context(), Clock(t)
	inboxPut(t, s, inboxItem("old-done", "r1"), time.Minute)
	inboxDone(t, s, "old-done")
	inboxPut(t, s, inboxItem("old-pending", "r1"), time.Minute)
	clock.Advance(time.Millisecond)
	cut := clock.Now()
	inboxPut(t, s, inboxItem("kept", "r1"), time.Minute)
	clock.Advance(time.Hour)

	n, err := s.Purge(ctx, cut)
	if err != nil {
		t.Fatalf("Purge: %v", err)
	}
	if n != 2 {
		t.Errorf("Purge deleted %d rows, want 2: the inbox items received before the cutoff, done or not", n)
	}
	if got := inboxKeys(orphans(t, s, "r2", time.Minute, 10)); !reflect.DeepEqual(got, []string{"kept"}) {
		t.Errorf("InboxOrphans after Purge = %q, want [kept]", got)
	}
	if !inboxPut(t, s, inboxItem("old-done", "r1"), time.Minute) {
		t.Error("InboxPut of a purged key returned false, want true: Purge ends the dedupe")
	}
	if inboxPut(t, s, inboxItem("kept", "r1"), time.Minute) {
		t.Error("InboxPut of a kept key returned true, want false")
	}
}

func testPing(t *testing.T, s store.Store) {
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}
