package matcher_test

import (
	"context"
	"slices"
	"testing"

	"github.com/incidentbot/incidentbot/matcher"
)

func resultIDs(ans *matcher.Answer) []string {
	var ids []string
	for _, r := range ans.Results {
		ids = append(ids, r.Case.ID)
	}
	return ids
}

// TestOnlyKeepsACaseToItsChannel: a case kept to a channel (a team case
// from a private channel) is found by lookups for that channel and by no
// other lookup, whatever method it goes through.
func TestOnlyKeepsACaseToItsChannel(t *testing.T) {
	ctx := context.Background()
	const (
		kept    = "tl-001"
		channel = "C0PRIV"
		text    = "postgres: FATAL: sorry, too many clients already; checkout API returning 500s"
		filter  = "symptom:connection-exhaustion"
	)
	lib := testLibrary(t)
	open := newMatcher(t, lib, matcher.Options{})
	m := newMatcher(t, lib, matcher.Options{Only: map[string]string{kept: channel}})

	// Without Only the case is found, so that each check below can fail.
	for name, ans := range map[string]func(*matcher.Matcher, matcher.MatchOptions) (*matcher.Answer, error){
		"MatchWith": func(m *matcher.Matcher, o matcher.MatchOptions) (*matcher.Answer, error) {
			return m.MatchWith(ctx, text, 3, o)
		},
		"SearchWith text": func(m *matcher.Matcher, o matcher.MatchOptions) (*matcher.Answer, error) {
			return m.SearchWith(ctx, text, 3, o)
		},
		"SearchWith filters": func(m *matcher.Matcher, o matcher.MatchOptions) (*matcher.Answer, error) {
			return m.SearchWith(ctx, filter, 3, o)
		},
	} {
		t.Run(name, func(t *testing.T) {
			find := func(m *matcher.Matcher, o matcher.MatchOptions) []string {
				t.Helper()
				a, err := ans(m, o)
				if err != nil {
					t.Fatal(err)
				}
				return resultIDs(a)
			}
			if ids := find(open, matcher.MatchOptions{}); !slices.Contains(ids, kept) {
				t.Fatalf("without Only the lookup finds %v, not %s: the test's text does not reach the case", ids, kept)
			}
			if ids := find(m, matcher.MatchOptions{Channel: channel}); !slices.Contains(ids, kept) {
				t.Errorf("in %s the lookup finds %v, want %s among them", channel, ids, kept)
			}
			for _, o := range []matcher.MatchOptions{{}, {Channel: "C0OTHER"}} {
				ids := find(m, o)
				if slices.Contains(ids, kept) {
					t.Errorf("a lookup for channel %q finds %s, kept to %s: %v", o.Channel, kept, channel, ids)
				}
				if len(ids) == 0 {
					t.Errorf("a lookup for channel %q finds nothing; the other cases should still be found", o.Channel)
				}
			}
		})
	}
	for name, ans := range map[string]func() (*matcher.Answer, error){
		"Match":  func() (*matcher.Answer, error) { return m.Match(ctx, text, 3) },
		"Rank":   func() (*matcher.Answer, error) { return m.Rank(ctx, text, 10) },
		"Search": func() (*matcher.Answer, error) { return m.Search(ctx, filter, 10) },
	} {
		a, err := ans()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(resultIDs(a), kept) {
			t.Errorf("%s, which knows no channel, finds %s", name, kept)
		}
	}
	if _, ok := m.Case(kept); ok {
		t.Errorf("Case(%s) returns the kept case", kept)
	}
	if _, ok := m.Library().Get(kept); ok || m.Library().Len() != lib.Len()-1 {
		t.Errorf("Library() has %d cases (kept case there: %v), want every case but %s", m.Library().Len(), ok, kept)
	}
	if c, ok := m.CaseIn(kept, channel); !ok || c.ID != kept {
		t.Errorf("CaseIn(%s, %s) = %v, want the case", kept, channel, ok)
	}
	for _, ch := range []string{"", "C0OTHER"} {
		if _, ok := m.CaseIn(kept, ch); ok {
			t.Errorf("CaseIn(%s, %q) returns the case kept to %s", kept, ch, channel)
		}
	}
	if c, ok := m.CaseIn("tl-002", "C0OTHER"); !ok || c.ID != "tl-002" {
		t.Errorf("CaseIn of a case kept nowhere = %v, want it anywhere", ok)
	}
}
