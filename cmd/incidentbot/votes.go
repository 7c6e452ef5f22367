package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/store"
	"github.com/incidentbot/incidentbot/store/postgres"
	"github.com/incidentbot/incidentbot/store/sqlite"
)

// maxVotesRead bounds the votes `match --db` reads, as the bot bounds
// those it keeps.
const maxVotesRead = 5000

// votedText is the votes cast on one text.
type votedText struct {
	sig   matcher.Signature
	votes []store.Feedback
}

// openDB opens the activity store at db for a command that only reads it
// (match, show): a postgres:// URL or a SQLite file, which must exist.
func openDB(ctx context.Context, db string) (store.Store, error) {
	var (
		st  store.Store
		err error
	)
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") {
		st, err = postgres.Open(ctx, db)
	} else {
		if _, serr := os.Stat(db); errors.Is(serr, fs.ErrNotExist) {
			return nil, fmt.Errorf("no activity store at %s: point --db at the file the bot writes, or at its postgres:// URL", db)
		}
		st, err = sqlite.Open(ctx, db)
	}
	if err != nil {
		return nil, fmt.Errorf("open the activity store: %w", err)
	}
	return st, nil
}

// readVotes is the workspace's votes kept in st that steer a lookup from
// channel ("" for none): the public ones, and those cast in channel.
func readVotes(ctx context.Context, st store.Store, team, channel string) (voteSet, error) {
	rows, err := st.Votes(ctx, team, time.Time{}, maxVotesRead)
	if err != nil {
		return nil, err
	}
	byText := map[string]*votedText{}
	var vs voteSet
	for _, f := range rows {
		if f.Private && f.Channel != channel {
			continue // as the bot does: a private channel's votes steer it alone
		}
		v, ok := byText[f.Query]
		if !ok {
			v = &votedText{sig: matcher.SignatureOf(f.Query)}
			byText[f.Query] = v
			vs = append(vs, v)
		}
		v.votes = append(v.votes, f)
	}
	return vs, nil
}

// voteSet is the votes read, by the text they were cast on.
type voteSet []*votedText

// boosts counts, per case, the votes cast on texts similar to text, as the
// bot does.
func (vs voteSet) boosts(text string) []matcher.Boost {
	sig := matcher.SignatureOf(text)
	byCase := map[string]int{}
	var out []matcher.Boost
	for _, v := range vs {
		if !sig.Similar(v.sig) {
			continue
		}
		for _, f := range v.votes {
			i, ok := byCase[f.CaseID]
			if !ok {
				i = len(out)
				byCase[f.CaseID] = i
				out = append(out, matcher.Boost{CaseID: f.CaseID})
			}
			if f.Vote == store.Helpful {
				out[i].Helpful++
			} else {
				out[i].NotRelevant++
			}
		}
	}
	return out
}
