package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"strings"
	"time"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/store"
)

// Team cases are the cases people saved from Slack into the activity
// store. They join the library after the built-in cases and the case files.
const (
	// teamSource is the source name (cases.Library.Origin) of team cases.
	teamSource = "team"
	// teamPrefix starts every team case id, so that a team case never
	// takes the id of a built-in case or of a case file.
	teamPrefix = "team-"
)

// teamStore is what the library reads of the team cases in the activity
// store; store.Store implements it.
type teamStore interface {
	TeamCases(ctx context.Context) ([]store.TeamCase, error)
	TeamCasesVersion(ctx context.Context) (int64, error)
}

// teamCases are the team cases as read at one version of the store.
type teamCases struct {
	version int64
	set     *cases.Set        // the cases that can be used
	only    map[string]string // private cases: id -> the channel they were captured in
	left    []string          // why a case was left out, one line each
}

// readTeamCases reads the team cases. The version is read before the
// cases: a write in between leaves a newer version for the next poll to
// see, so nothing saved is missed.
func readTeamCases(ctx context.Context, st teamStore, tax *cases.Taxonomy) (teamCases, error) {
	v, err := st.TeamCasesVersion(ctx)
	if err != nil {
		return teamCases{}, err
	}
	rows, err := st.TeamCases(ctx)
	if err != nil {
		return teamCases{}, err
	}
	tc := teamCases{version: v, only: map[string]string{}}
	files := map[string][]byte{}
	for _, r := range rows {
		if r.Private {
			// Kept even when the case is left out below: a private
			// case is never shown outside its channel.
			tc.only[r.ID] = r.Channel
		}
		if !strings.HasPrefix(r.ID, teamPrefix) || strings.ContainsAny(r.ID, "/\\") {
			tc.left = append(tc.left, fmt.Sprintf("team case %q left out: team case ids start with %q and have no slashes", r.ID, teamPrefix))
			continue
		}
		files[r.ID+".json"] = r.Case
	}
	set := cases.LoadBytes(teamSource, files, tax)
	for _, p := range set.Problems {
		if p.Severity == cases.Error {
			tc.left = append(tc.left, p.String())
		}
	}
	kept := set.Cases[:0]
	for _, c := range set.Cases {
		if row := strings.TrimSuffix(path.Base(set.Files[c.ID]), ".json"); c.ID != row {
			tc.left = append(tc.left, fmt.Sprintf("team case %s left out: its JSON has id %q; a team case's id must be its row's", row, c.ID))
			delete(set.Files, c.ID)
			continue
		}
		kept = append(kept, c)
	}
	set.Cases = kept
	tc.set = set
	return tc, nil
}

// withTeam merges the team cases after the built-in cases and case files.
// A team case whose id a built-in case or a case file already has is left
// out, not merged over it: the file is the reviewed one (cases export
// writes team cases as files for review, under their own ids). It returns
// the library, the cases kept to one channel, and why cases were left out.
func withTeam(files []*cases.Set, tc teamCases) (*cases.Library, map[string]string, []string) {
	if tc.set == nil {
		lib, _ := cases.NewLibrary(files...)
		return lib, nil, nil
	}
	taken := map[string]string{}
	for _, s := range files {
		for _, c := range s.Cases {
			taken[c.ID] = s.Name
		}
	}
	team := &cases.Set{Name: tc.set.Name, Files: tc.set.Files}
	only := map[string]string{}
	left := append([]string(nil), tc.left...)
	for _, c := range tc.set.Cases {
		if src, dup := taken[c.ID]; dup {
			left = append(left, fmt.Sprintf("team case %s left out: %s has a case with the same id", c.ID, src))
			continue
		}
		team.Cases = append(team.Cases, c)
	}
	for id, ch := range tc.only {
		if _, dup := taken[id]; !dup {
			only[id] = ch
		}
	}
	lib, _ := cases.NewLibrary(append(append([]*cases.Set(nil), files...), team)...)
	return lib, only, left
}

// publicLibrary is the library every lookup that knows no channel sees, as
// the matcher's Library gives it: the files' cases and the team cases, but
// none kept to a private channel. Digests read it.
func publicLibrary(files []*cases.Set, tc teamCases) *cases.Library {
	lib, only, _ := withTeam(files, tc)
	return lib.Filter(func(c *cases.Case) bool { _, kept := only[c.ID]; return !kept })
}

// teamNotifier is a store that announces the team case changes of every
// replica as they commit; *postgres.Store implements it with LISTEN/NOTIFY.
type teamNotifier interface {
	WatchTeamCases(ctx context.Context, changed func()) error
}

// followTeamCases checks every interval, until ctx ends, whether the team
// cases changed, and rebuilds the library when they did: a check is one
// small query. A store that announces changes (PostgreSQL) makes it check
// at once as well. A save on this replica does not wait for either (the
// bot's RefreshLibrary rebuilds at once).
func followTeamCases(ctx context.Context, lib *liveLibrary, st teamStore, interval time.Duration) {
	kick := make(chan struct{}, 1)
	if n, ok := st.(teamNotifier); ok {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			n.WatchTeamCases(ctx, func() {
				select {
				case kick <- struct{}{}:
				default:
				}
			})
		}()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
		if err := lib.refreshTeam(ctx, st); err != nil && ctx.Err() == nil {
			lib.log.Warn("team cases not refreshed; the library in use stays", "err", err)
		}
	}
}

// teamFlags configure how a process follows the team cases.
type teamFlags struct {
	TeamPoll duration `name:"team-cases-poll" default:"10s" env:"INCIDENTBOT_TEAM_CASES_POLL" help:"How often to check the activity store for team cases saved or deleted by any replica, and rebuild the index when they changed (1s to 1h)."`
}

// Bounds of --team-cases-poll.
const (
	minTeamPoll = time.Second
	maxTeamPoll = time.Hour
)

func (f *teamFlags) check(o *origin) error {
	return o.durationIn("team-cases-poll", f.TeamPoll, minTeamPoll, maxTeamPoll)
}

// openExisting opens the activity store for a command that only reads it:
// with SQLite and no file at the path, it returns ok false and creates
// nothing.
func openExisting(ctx context.Context, sf *storeFlags, e env, log *slog.Logger) (st store.Store, where string, ok bool, err error) {
	if e.getenv("DATABASE_URL") == "" {
		p, err := sf.sqlitePath()
		if err != nil {
			return nil, "", false, err
		}
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return nil, p, false, nil
		}
	}
	st, where, err = sf.open(ctx, e, log)
	if err != nil {
		return nil, "", false, err
	}
	return st, where, true, nil
}

// dbFlags are match's and show's --db: the activity store whose team
// cases join the library (and, for match, whose votes steer it). No
// environment variable sets it: without --db these commands read no
// database.
type dbFlags struct {
	DB      string `name:"db" placeholder:"FILE|URL" help:"Add the team cases kept in this activity store (a SQLite file, or a postgres:// URL); match also lets its votes steer the ranking with --team. Without it no database is read."`
	Channel string `name:"channel" placeholder:"C" help:"With --db: also the team cases kept to this private channel, and for match the votes cast there, as the bot sees them there. Without it, cases and votes from private channels are left out."`
}

func (f *dbFlags) check() error {
	if f.Channel != "" && f.DB == "" {
		return usagef("--channel goes with --db: it names the private channel whose team cases in that store to add")
	}
	return nil
}

// libraryWithTeam loads the library and, with --db, adds the team cases of
// st (open when --db is given). It returns the library and the cases it
// keeps to one channel (id -> channel): a lookup sees those only for
// --channel. Why team cases were left out is said on warn.
func libraryWithTeam(ctx context.Context, lf *libFlags, st teamStore, warn io.Writer) (*cases.Library, map[string]string, error) {
	sets, _, err := lf.loadSets(ctx, warn)
	if err != nil {
		return nil, nil, err
	}
	lib, err := mergeSets(sets, warn)
	if err != nil || st == nil {
		return lib, nil, err
	}
	tc, err := readTeamCases(ctx, st, lf.tax())
	if err != nil {
		return nil, nil, fmt.Errorf("read the team cases: %w", err)
	}
	lib, only, left := withTeam(sets, tc)
	for _, why := range left {
		fmt.Fprintf(warn, "incidentbot: %s\n", why)
	}
	return lib, only, nil
}

// seenIn reports whether a case may be shown for channel: every case but
// those only keeps to another channel (or to any, when channel is empty),
// as matcher.MatchOptions.Channel scopes the bot's lookups.
func seenIn(only map[string]string, id, channel string) bool {
	ch, kept := only[id]
	return !kept || (channel != "" && ch == channel)
}
