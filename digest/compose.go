// Package digest composes and schedules incidentbot's weekly digests: what
// the week's alerts and incidents looked like, which past cases kept coming
// up and whether they helped, and one case worth reading. Composing is pure;
// the scheduler posts each digest exactly once per target and week.
package digest

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/store"
)

// Week is the period a digest covers: [From, To).
type Week struct {
	Key  string // ISO week of From, e.g. "2026-W48"
	From time.Time
	To   time.Time
}

// WeekBefore returns the seven days before run, in loc: the week a digest
// posted at run looks back on.
func WeekBefore(run time.Time, loc *time.Location) Week {
	to := run.In(loc)
	from := to.AddDate(0, 0, -7)
	y, w := from.ISOWeek()
	return Week{Key: fmt.Sprintf("%04d-W%02d", y, w), From: from, To: to}
}

// ParseWeek reads an ISO week ("2026-W48") as Monday 00:00 to the next
// Monday 00:00 in loc.
func ParseWeek(key string, loc *time.Location) (Week, error) {
	y, w, ok := strings.Cut(strings.ToUpper(key), "-W")
	year, err1 := strconv.Atoi(y)
	week, err2 := strconv.Atoi(w)
	if !ok || err1 != nil || err2 != nil || week < 1 || week > 53 || year < 2000 || year > 9999 {
		return Week{}, fmt.Errorf("week %q: write it as YYYY-Www, e.g. 2026-W48", key)
	}
	// January 4th is always in ISO week 1.
	jan4 := time.Date(year, 1, 4, 0, 0, 0, 0, loc)
	monday := jan4.AddDate(0, 0, -((int(jan4.Weekday())+6)%7)+7*(week-1))
	if yy, ww := monday.ISOWeek(); yy != year || ww != week {
		return Week{}, fmt.Errorf("week %q does not exist", key)
	}
	return Week{Key: fmt.Sprintf("%04d-W%02d", year, week), From: monday, To: monday.AddDate(0, 0, 7)}, nil
}

// Count is how often a tag or case came up this week and the week before.
type Count struct {
	ID   string
	N    int
	Prev int
}

// CaseCount is a suggested case with its votes this week.
type CaseCount struct {
	Case        *cases.Case
	N           int
	Helpful     int
	NotRelevant int
}

// Digest is one week's digest for one channel.
type Digest struct {
	Target string
	Lang   cases.Lang
	Week   Week

	Suggestions     int
	PrevSuggestions int
	Channels        int
	PrevChannels    int

	Symptoms   []Count
	Components []Count
	TopCases   []CaseCount
	// NotRelevant lists cases voted not relevant this week, to curate the
	// library.
	NotRelevant []CaseCount
	// Added lists library cases added or updated this week (at most
	// maxListed); AddedTotal counts them all.
	Added      []*cases.Case
	AddedTotal int
	// CaseOfWeek is the library case most relevant to the week's most
	// frequent symptom and component.
	CaseOfWeek *cases.Case
	Quiet      bool
}

// Input is what a digest is composed from.
type Input struct {
	Target   string
	Lang     cases.Lang
	Week     Week
	This     []store.Suggestion // suggestions in Week
	Prev     []store.Suggestion // suggestions in the week before
	Feedback []store.Feedback   // votes in Week
	Library  *cases.Library
}

// maxListed bounds every list in a digest.
const maxListed = 5

// visible reports whether activity in channel may be counted in a digest for
// target: private channels only count in their own digest.
func visible(private bool, channel, target string) bool {
	return !private || channel == target
}

// Compose builds the digest. It carries only counts, tag ids and library
// cases: never message text, never a channel's name.
func Compose(in Input) *Digest {
	d := &Digest{Target: in.Target, Lang: in.Lang, Week: in.Week}
	this := filter(in.This, in.Target)
	prev := filter(in.Prev, in.Target)
	d.Suggestions, d.PrevSuggestions = len(this), len(prev)
	d.Channels, d.PrevChannels = channels(this), channels(prev)

	d.Symptoms = top(tally(this, func(s store.Suggestion) []string { return s.Symptoms }),
		tally(prev, func(s store.Suggestion) []string { return s.Symptoms }))
	d.Components = top(tally(this, func(s store.Suggestion) []string { return s.Components }),
		tally(prev, func(s store.Suggestion) []string { return s.Components }))

	votes := map[string][2]int{}
	for _, f := range in.Feedback {
		if !visible(f.Private, f.Channel, in.Target) {
			continue
		}
		v := votes[f.CaseID]
		if f.Vote == store.Helpful {
			v[0]++
		} else {
			v[1]++
		}
		votes[f.CaseID] = v
	}
	caseN := tally(this, func(s store.Suggestion) []string {
		ids := make([]string, len(s.Cases))
		for i, c := range s.Cases {
			ids[i] = c.CaseID
		}
		return ids
	})
	for _, c := range top(caseN, nil) {
		if lc, ok := in.Library.Get(c.ID); ok {
			v := votes[c.ID]
			d.TopCases = append(d.TopCases, CaseCount{Case: lc, N: c.N, Helpful: v[0], NotRelevant: v[1]})
		}
	}
	for _, id := range sortedKeys(votes) {
		v := votes[id]
		if v[1] == 0 {
			continue
		}
		if lc, ok := in.Library.Get(id); ok && len(d.NotRelevant) < maxListed {
			d.NotRelevant = append(d.NotRelevant, CaseCount{Case: lc, N: caseN[id], Helpful: v[0], NotRelevant: v[1]})
		}
	}
	builtinSince := installedSince(in)
	for _, c := range in.Library.Cases() {
		t, err := time.Parse(time.RFC3339, c.UpdatedAt)
		if err != nil || t.Before(in.Week.From) || !t.Before(in.Week.To) {
			continue
		}
		if in.Library.Origin(c.ID) == cases.BuiltinSource && t.Before(builtinSince) {
			continue // shipped with the install, not news to this team
		}
		d.AddedTotal++
		if len(d.Added) < maxListed {
			d.Added = append(d.Added, c)
		}
	}
	d.CaseOfWeek = caseOfWeek(in.Library, d, caseN)
	d.Quiet = d.Suggestions == 0
	return d
}

// installedSince estimates when this installation began to see activity, for
// telling built-in cases that are news from those that came with the
// install: with activity the week before, the install is older than the week;
// otherwise it began with the week's first suggestion, and with no activity
// at all nothing built-in is news yet. The first digest of a new install so
// lists none of the built-in library it shipped with.
func installedSince(in Input) time.Time {
	if len(in.Prev) > 0 {
		return in.Week.From
	}
	first := in.Week.To
	for _, s := range in.This {
		if s.Time.Before(first) {
			first = s.Time
		}
	}
	return first
}

func filter(ss []store.Suggestion, target string) []store.Suggestion {
	var out []store.Suggestion
	for _, s := range ss {
		if visible(s.Private, s.Channel, target) {
			out = append(out, s)
		}
	}
	return out
}

func channels(ss []store.Suggestion) int {
	seen := map[string]bool{}
	for _, s := range ss {
		seen[s.Channel] = true
	}
	return len(seen)
}

func tally(ss []store.Suggestion, ids func(store.Suggestion) []string) map[string]int {
	n := map[string]int{}
	for _, s := range ss {
		for _, id := range ids(s) {
			n[id]++
		}
	}
	return n
}

// top returns the most frequent ids, with their counts the week before.
func top(this, prev map[string]int) []Count {
	var out []Count
	for _, id := range sortedKeys(this) {
		out = append(out, Count{ID: id, N: this[id], Prev: prev[id]})
	}
	slices.SortStableFunc(out, func(a, b Count) int { return cmp.Compare(b.N, a.N) })
	if len(out) > maxListed {
		out = out[:maxListed]
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// caseOfWeek picks the library case that carries the week's most frequent
// symptom and component (or, failing that, the symptom): the one suggested
// most this week, then the newest.
func caseOfWeek(lib *cases.Library, d *Digest, suggested map[string]int) *cases.Case {
	if len(d.Symptoms) == 0 {
		return nil
	}
	sym := d.Symptoms[0].ID
	comp := ""
	if len(d.Components) > 0 {
		comp = d.Components[0].ID
	}
	var best *cases.Case
	better := func(c *cases.Case) bool {
		if best == nil {
			return true
		}
		if a, b := suggested[c.ID], suggested[best.ID]; a != b {
			return a > b
		}
		return c.Date > best.Date
	}
	for _, strict := range []bool{true, false} {
		for _, c := range lib.Cases() {
			if !slices.Contains(c.Symptoms, sym) || strict && comp != "" && !slices.Contains(c.Components, comp) {
				continue
			}
			if better(c) {
				best = c
			}
		}
		if best != nil {
			return best
		}
	}
	return nil
}
