package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/digest"
	"github.com/incidentbot/incidentbot/store"
	"github.com/incidentbot/incidentbot/store/postgres"
	"github.com/incidentbot/incidentbot/store/sqlite"
)

// storeFlags choose the activity store.
type storeFlags struct {
	DB       string `name:"db" placeholder:"FILE" env:"INCIDENTBOT_DB" help:"SQLite file for activity (suggestions, votes, digests); default $XDG_DATA_HOME/incidentbot/activity.db. DATABASE_URL in the environment selects PostgreSQL instead."`
	DBSchema string `name:"db-schema" placeholder:"NAME" env:"INCIDENTBOT_DB_SCHEMA" help:"PostgreSQL only: keep the tables in this schema (created if missing) instead of the first of the URL's search_path; use it when the database is shared."`
}

// open opens PostgreSQL when DATABASE_URL is set, else the SQLite file.
// PostgreSQL's steps (connecting, the migration lock) are logged on log
// when it is not nil.
func (s *storeFlags) open(ctx context.Context, e env, log *slog.Logger) (store.Store, string, error) {
	if url := e.getenv("DATABASE_URL"); url != "" {
		var opts []postgres.Option
		if log != nil {
			opts = append(opts, postgres.WithLogger(log))
		}
		if s.DBSchema != "" {
			opts = append(opts, postgres.WithSchema(s.DBSchema))
		}
		st, err := postgres.Open(ctx, url, opts...)
		if err != nil {
			return nil, "", fmt.Errorf("open PostgreSQL from DATABASE_URL: %w", err)
		}
		return st, "postgres", nil
	}
	if s.DBSchema != "" {
		return nil, "", errors.New("--db-schema (INCIDENTBOT_DB_SCHEMA) applies to PostgreSQL only: set DATABASE_URL, or unset it")
	}
	path, err := s.sqlitePath()
	if err != nil {
		return nil, "", err
	}
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		if isLocked(err) {
			return nil, "", fmt.Errorf("open activity store %s: %w: another process holds a lock on this file (another incidentbot run, a backup or a sqlite3 shell); stop it and try again. Replicas cannot share a SQLite file: give them PostgreSQL with DATABASE_URL", path, err)
		}
		return nil, "", fmt.Errorf("open activity store %s: %w (set --db or INCIDENTBOT_DB to a writable file)", path, err)
	}
	return st, path, nil
}

// sqlitePath is the SQLite file: --db, else the default under the user's
// data directory.
func (s *storeFlags) sqlitePath() (string, error) {
	if s.DB != "" {
		return s.DB, nil
	}
	p, err := sqlite.DefaultPath()
	if err != nil {
		return "", fmt.Errorf("no data directory for the activity store: %w (set --db or INCIDENTBOT_DB)", err)
	}
	return p, nil
}

// isLocked reports whether SQLite said another connection holds the file
// (SQLITE_BUSY, after the store's busy timeout).
func isLocked(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}

// stateTimeout bounds a call to the shared state, so a slow database never
// holds up an answer for long (the bot answers anyway when state fails).
const stateTimeout = 2 * time.Second

// sharedState keeps the bot's event and reply claims in the store, so that
// a restart or another replica knows what was answered.
type sharedState struct {
	s     store.Store
	owner string
}

func (st sharedState) Claim(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, stateTimeout)
	defer cancel()
	return st.s.Claim(ctx, key, st.owner, ttl)
}

func (st sharedState) ClaimReply(ctx context.Context, channel, thread string, ttl time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, stateTimeout)
	defer cancel()
	return st.s.ClaimReply(ctx, channel, thread, st.owner, ttl)
}

func (st sharedState) PutReply(ctx context.Context, r store.Reply) error {
	ctx, cancel := context.WithTimeout(ctx, stateTimeout)
	defer cancel()
	r.Updated = time.Now().UTC()
	return st.s.PutReply(ctx, r)
}

func (st sharedState) GetReply(ctx context.Context, channel, thread string) (store.Reply, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, stateTimeout)
	defer cancel()
	return st.s.GetReply(ctx, channel, thread)
}

func (st sharedState) PutShare(ctx context.Context, sh store.Share) error {
	ctx, cancel := context.WithTimeout(ctx, stateTimeout)
	defer cancel()
	return st.s.PutShare(ctx, sh)
}

func (st sharedState) GetShare(ctx context.Context, id string) (store.Share, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, stateTimeout)
	defer cancel()
	return st.s.GetShare(ctx, id)
}

// digests gives the bot previews and due times from the scheduler.
type digests struct {
	s   *digest.Scheduler
	now func() time.Time
}

func (d digests) Preview(ctx context.Context, channel string, lang cases.Lang) (*digest.Digest, error) {
	loc := time.UTC
	if t, ok := d.s.Target(channel); ok {
		loc, lang = t.Location, t.Lang
	}
	return d.s.Compose(ctx, channel, digest.WeekBefore(d.now(), loc), lang)
}

func (d digests) Next() []bot.DigestDue {
	var out []bot.DigestDue
	for _, t := range d.s.Targets() {
		out = append(out, bot.DigestDue{Channel: t.Channel, At: t.Next(d.now())})
	}
	return out
}

// digestFlags configure the weekly digests.
type digestFlags struct {
	Digest []string `name:"digest" placeholder:"TARGET" sep:"|" env:"INCIDENTBOT_DIGESTS" help:"Post a weekly digest: CHANNEL[;CRON SPEC[;en|ko]], e.g. \"C0123ABCD;CRON_TZ=Asia/Seoul 0 9 * * MON;ko\"; default spec Monday 09:00 UTC (repeatable; in the environment, targets separated by |)."`
}

// parse reads the targets; an invalid one stops the start with a message
// naming it.
func (d *digestFlags) parse() ([]digest.Target, error) {
	var out []digest.Target
	seen := map[string]bool{}
	for _, s := range d.Digest {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		t, err := digest.ParseTarget(s)
		if err != nil {
			return nil, usageError{err.Error()}
		}
		if seen[t.Channel] {
			return nil, usagef("digest target %q: channel %s is listed twice", s, t.Channel)
		}
		seen[t.Channel] = true
		out = append(out, t)
	}
	return out, nil
}

// replicaName names this process in claims: host and pid unless set.
func replicaName(e env) string {
	if v := e.getenv("INCIDENTBOT_REPLICA"); v != "" {
		return v
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// inbox records events in the store before they are acked.
type inbox struct {
	s     store.Store
	owner string
	lease time.Duration
}

func (in inbox) Put(ctx context.Context, key, kind string, payload []byte) (bool, error) {
	return in.s.InboxPut(ctx, store.InboxItem{Key: key, Kind: kind, Payload: payload, Owner: in.owner, Received: time.Now().UTC()}, in.lease)
}

func (in inbox) Done(ctx context.Context, key string) error { return in.s.InboxDone(ctx, key) }

func (in inbox) Renew(ctx context.Context) error {
	_, err := in.s.InboxRenew(ctx, in.owner, in.lease)
	return err
}

func (in inbox) Orphans(ctx context.Context, limit int) ([]store.InboxItem, error) {
	return in.s.InboxOrphans(ctx, in.owner, in.lease, limit)
}
