// Package sqlite is the embedded store.Store: one SQLite file, opened with
// the pure-Go driver modernc.org/sqlite, in WAL mode so that several
// processes may share it.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	sqlite3 "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/incidentbot/incidentbot/store"
	"github.com/incidentbot/incidentbot/store/internal/migrate"
)

//go:embed migrations/*.sql
var migrations embed.FS

// busyTimeout is how long a statement waits for another connection or
// process to release the database before it fails.
const busyTimeout = 10 * time.Second

// Store is a store.Store in a SQLite file.
type Store struct {
	db  *sql.DB
	now func() time.Time
	// upTo, when positive, is the last migration applied: tests use it to
	// build a database as an older version left it.
	upTo int
	// pragmas are more DSN parameters: tests use them to make a full disk.
	pragmas []string
}

var _ store.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithNow sets the clock that claims and leases are measured on; the default
// is time.Now.
func WithNow(now func() time.Time) Option {
	return func(s *Store) { s.now = now }
}

// DefaultPath returns where the activity database lives by default:
// $XDG_DATA_HOME/incidentbot/activity.db, or
// ~/.local/share/incidentbot/activity.db when XDG_DATA_HOME is not set to an
// absolute path.
func DefaultPath() (string, error) {
	if dir := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "incidentbot", "activity.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("default sqlite path: %w", err)
	}
	return filepath.Join(home, ".local", "share", "incidentbot", "activity.db"), nil
}

// Open opens the database at path, creating it and its parent directories
// if needed, and brings its schema up to date.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	s, err := open(ctx, path, opts)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	return s, nil
}

func open(ctx context.Context, path string, opts []Option) (*Store, error) {
	if path == "" || strings.ContainsRune(path, '?') || strings.HasPrefix(path, "file:") || path == ":memory:" {
		return nil, errors.New("path must be a file name without '?'")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := private(path); err != nil {
		return nil, err
	}
	// Each connection waits for locks instead of failing at once, logs
	// ahead so that readers do not block the writer, checks foreign keys,
	// and starts its transactions with BEGIN IMMEDIATE so that a
	// read-then-write transaction never fails halfway on a lock.
	s := &Store{now: time.Now}
	for _, o := range opts {
		o(s)
	}
	dsn := path + "?" + strings.Join(append([]string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", busyTimeout.Milliseconds()),
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(NORMAL)",
		"_pragma=foreign_keys(1)",
		"_txlock=immediate",
	}, s.pragmas...), "&")
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	s.db = db
	// Processes opening a new file at once race to switch it to WAL, and
	// SQLite answers that race with SQLITE_BUSY at once, not after the busy
	// timeout: try again, briefly, until one has done it.
	backoff := 10 * time.Millisecond
	deadline := time.Now().Add(busyTimeout)
	for {
		err := s.migrate(ctx)
		if err == nil {
			return s, nil
		}
		if !isBusy(err) || time.Now().After(deadline) {
			db.Close()
			return nil, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			db.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// private makes the database file, before SQLite opens it, readable and
// writable by its owner only: it holds what people wrote in private
// channels. SQLite gives the -wal and -shm files it creates the database
// file's mode; those an older version left are made private too.
func private(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		f.Close()
	case !errors.Is(err, fs.ErrExist):
		return err
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) && p != path {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, fi.Mode().Perm()&0o700); err != nil {
				return fmt.Errorf("make %s private: %w", p, err)
			}
		}
	}
	return nil
}

// isBusy reports whether err is SQLite's "database is locked".
func isBusy(err error) bool {
	var se *sqlite3.Error
	return errors.As(err, &se) && se.Code()&0xff == 5 // SQLITE_BUSY and its extended codes
}

// rejected marks errors SQLite raises for the values of a write
// (SQLITE_TOOBIG, SQLITE_CONSTRAINT, SQLITE_MISMATCH) with
// store.ErrRejected: trying again will not help. A full disk is not one of
// them.
func rejected(err error) error {
	var se *sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case 18, 19, 20:
			return fmt.Errorf("%w: %w", store.ErrRejected, err)
		}
	}
	return err
}

// migrate applies the embedded migrations that the database lacks, each in
// its own BEGIN IMMEDIATE transaction, so processes opening the file at once
// apply each exactly once.
func (s *Store) migrate(ctx context.Context) error {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	ms, err := migrate.Load(dir)
	if err != nil {
		return err
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if err := adoptOldTable(ctx, tx); err != nil {
			return fmt.Errorf("move %s to %s: %w", migrate.OldTable, migrate.Table, err)
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+migrate.Table+` (
			version    INTEGER NOT NULL PRIMARY KEY,
			applied_at INTEGER NOT NULL
		) STRICT`); err != nil {
			return fmt.Errorf("create %s: %w", migrate.Table, err)
		}
		var have int
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM `+migrate.Table).Scan(&have); err != nil {
			return fmt.Errorf("read %s: %w", migrate.Table, err)
		}
		return migrate.Check(have, ms)
	})
	if err != nil {
		return err
	}
	for _, m := range ms {
		if s.upTo > 0 && m.Version > s.upTo {
			break
		}
		if err := s.apply(ctx, m); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// adoptOldTable moves the migrations recorded by versions before the
// table's prefix into migrate.Table. Only a schema_migrations with exactly
// the columns those versions made (version and applied_at, both INTEGER)
// beside their suggestions table is theirs; another tool's is left alone.
func adoptOldTable(ctx context.Context, tx *sql.Tx) error {
	var cols string
	var suggestions int
	err := tx.QueryRowContext(ctx, `SELECT
		coalesce((SELECT group_concat(name || ':' || type, ',') FROM (SELECT name, type FROM pragma_table_info(?) ORDER BY name)), ''),
		(SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'suggestions')`, migrate.OldTable).Scan(&cols, &suggestions)
	if err != nil || cols != "applied_at:INTEGER,version:INTEGER" || suggestions != 1 {
		return err
	}
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS ` + migrate.Table + ` (
			version    INTEGER NOT NULL PRIMARY KEY,
			applied_at INTEGER NOT NULL
		) STRICT`,
		`INSERT INTO ` + migrate.Table + ` (version, applied_at) SELECT version, applied_at FROM ` + migrate.OldTable + ` WHERE true ON CONFLICT DO NOTHING`,
		`DROP TABLE ` + migrate.OldTable,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) apply(ctx context.Context, m migrate.Migration) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var done bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+migrate.Table+` WHERE version = ?)`, m.Version).Scan(&done); err != nil {
			return err
		}
		if done {
			return nil
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO `+migrate.Table+` (version, applied_at) VALUES (?, ?)`, m.Version, micros(time.Now()))
		return err
	})
}

// tx runs fn in a transaction, which the DSN makes BEGIN IMMEDIATE.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// RecordSuggestion implements store.Store.
func (s *Store) RecordSuggestion(ctx context.Context, sg store.Suggestion) error {
	sg = sg.Clean()
	symptoms, err1 := jsonList(sg.Symptoms)
	components, err2 := jsonList(sg.Components)
	cases, err3 := jsonList(encodeCases(sg.Cases))
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("record suggestion %s: %w", sg.Key, err)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO suggestions
		(key, at, channel, private, thread, source, lang, symptoms, components, cases)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (key) DO NOTHING`,
		sg.Key, micros(sg.Time), sg.Channel, sg.Private, sg.Thread, string(sg.Source), sg.Lang, symptoms, components, cases)
	if err != nil {
		return fmt.Errorf("record suggestion %s: %w", sg.Key, rejected(err))
	}
	return nil
}

// RecordFeedback implements store.Store.
func (s *Store) RecordFeedback(ctx context.Context, f store.Feedback) (bool, error) {
	f = f.Clean()
	res, err := s.db.ExecContext(ctx, `INSERT INTO feedback
		(channel, message, case_id, user_id, at, private, vote, query, team)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (channel, message, case_id, user_id) DO UPDATE SET
			at = excluded.at, private = excluded.private, vote = excluded.vote, query = excluded.query, team = excluded.team
		WHERE feedback.vote <> excluded.vote`,
		f.Channel, f.Message, f.CaseID, f.User, micros(f.Time), f.Private, string(f.Vote), f.Query, f.Team)
	if err != nil {
		return false, fmt.Errorf("record feedback on %s: %w", f.CaseID, rejected(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("record feedback on %s: %w", f.CaseID, err)
	}
	return n > 0, nil
}

// Suggestions implements store.Store.
func (s *Store) Suggestions(ctx context.Context, from, to time.Time) ([]store.Suggestion, error) {
	out, err := s.suggestions(ctx, from, to)
	if err != nil {
		return nil, fmt.Errorf("list suggestions: %w", err)
	}
	return out, nil
}

func (s *Store) suggestions(ctx context.Context, from, to time.Time) ([]store.Suggestion, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT key, at, channel, private, thread, source, lang, symptoms, components, cases
		FROM suggestions WHERE at >= ? AND at < ? ORDER BY at, key`, micros(from), micros(to))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Suggestion
	for rows.Next() {
		var (
			sg                          store.Suggestion
			at                          int64
			source                      string
			symptoms, components, cases string
			scored                      []scoredCase
		)
		if err := rows.Scan(&sg.Key, &at, &sg.Channel, &sg.Private, &sg.Thread, &source, &sg.Lang, &symptoms, &components, &cases); err != nil {
			return nil, err
		}
		sg.Time, sg.Source = fromMicros(at), store.Source(source)
		if err := unmarshalList(symptoms, &sg.Symptoms); err != nil {
			return nil, fmt.Errorf("suggestion %s symptoms: %w", sg.Key, err)
		}
		if err := unmarshalList(components, &sg.Components); err != nil {
			return nil, fmt.Errorf("suggestion %s components: %w", sg.Key, err)
		}
		if err := unmarshalList(cases, &scored); err != nil {
			return nil, fmt.Errorf("suggestion %s cases: %w", sg.Key, err)
		}
		sg.Cases = decodeCases(scored)
		out = append(out, sg)
	}
	return out, rows.Err()
}

// Feedback implements store.Store.
func (s *Store) Feedback(ctx context.Context, from, to time.Time) ([]store.Feedback, error) {
	out, err := s.feedback(ctx, from, to)
	if err != nil {
		return nil, fmt.Errorf("list feedback: %w", err)
	}
	return out, nil
}

func (s *Store) feedback(ctx context.Context, from, to time.Time) ([]store.Feedback, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT at, team, channel, private, message, user_id, case_id, vote, query
		FROM feedback WHERE at >= ? AND at < ? ORDER BY at, channel, message, case_id, user_id`, micros(from), micros(to))
	if err != nil {
		return nil, err
	}
	return scanFeedback(rows)
}

// Votes implements store.Store.
func (s *Store) Votes(ctx context.Context, team string, since time.Time, limit int) ([]store.Feedback, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT at, team, channel, private, message, user_id, case_id, vote, query
		FROM feedback WHERE team = ? AND at >= ? ORDER BY at DESC, channel, message, case_id, user_id LIMIT ?`,
		team, micros(since), limit)
	if err != nil {
		return nil, fmt.Errorf("list votes: %w", err)
	}
	out, err := scanFeedback(rows)
	if err != nil {
		return nil, fmt.Errorf("list votes: %w", err)
	}
	return out, nil
}

func scanFeedback(rows *sql.Rows) ([]store.Feedback, error) {
	defer rows.Close()
	var out []store.Feedback
	for rows.Next() {
		var (
			f    store.Feedback
			at   int64
			vote string
		)
		if err := rows.Scan(&at, &f.Team, &f.Channel, &f.Private, &f.Message, &f.User, &f.CaseID, &vote, &f.Query); err != nil {
			return nil, err
		}
		f.Time, f.Vote = fromMicros(at), store.Vote(vote)
		out = append(out, f)
	}
	return out, rows.Err()
}

// CaseFeedback implements store.Store.
func (s *Store) CaseFeedback(ctx context.Context, caseID string) (helpful, notRelevant int, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT
			COUNT(*) FILTER (WHERE vote = 'helpful'),
			COUNT(*) FILTER (WHERE vote = 'not_relevant')
		FROM feedback WHERE case_id = ?`, caseID).Scan(&helpful, &notRelevant)
	if err != nil {
		return 0, 0, fmt.Errorf("count feedback on %s: %w", caseID, err)
	}
	return helpful, notRelevant, nil
}

// PutReply implements store.Store.
func (s *Store) PutReply(ctx context.Context, r store.Reply) error {
	r = r.Clean()
	caseIDs, err := jsonList(r.CaseIDs)
	if err != nil {
		return fmt.Errorf("put reply in %s/%s: %w", r.Channel, r.Thread, err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO replies (channel, thread, reply_ts, lang, case_ids, text, updated)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (channel, thread) DO UPDATE SET
			reply_ts = excluded.reply_ts, lang = excluded.lang, case_ids = excluded.case_ids, text = excluded.text,
			updated = excluded.updated`,
		r.Channel, r.Thread, r.ReplyTS, r.Lang, caseIDs, r.Text, micros(r.Updated))
	if err != nil {
		return fmt.Errorf("put reply in %s/%s: %w", r.Channel, r.Thread, err)
	}
	return nil
}

// GetReply implements store.Store.
func (s *Store) GetReply(ctx context.Context, channel, thread string) (store.Reply, bool, error) {
	r := store.Reply{Channel: channel, Thread: thread}
	var (
		caseIDs string
		updated int64
	)
	err := s.db.QueryRowContext(ctx, `SELECT reply_ts, lang, case_ids, text, updated FROM replies WHERE channel = ? AND thread = ?`,
		channel, thread).Scan(&r.ReplyTS, &r.Lang, &caseIDs, &r.Text, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Reply{}, false, nil
	}
	if err == nil {
		err = unmarshalList(caseIDs, &r.CaseIDs)
	}
	if err != nil {
		return store.Reply{}, false, fmt.Errorf("get reply in %s/%s: %w", channel, thread, err)
	}
	r.Updated = fromMicros(updated)
	return r, true, nil
}

// PutShare implements store.Store.
func (s *Store) PutShare(ctx context.Context, sh store.Share) error {
	sh = sh.Clean()
	_, err := s.db.ExecContext(ctx, `INSERT INTO shares (id, channel, thread, private, text, created)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET channel = excluded.channel, thread = excluded.thread,
			private = excluded.private, text = excluded.text, created = excluded.created`,
		sh.ID, sh.Channel, sh.Thread, sh.Private, sh.Text, micros(sh.Created))
	if err != nil {
		return fmt.Errorf("put share %s: %w", sh.ID, rejected(err))
	}
	return nil
}

// GetShare implements store.Store.
func (s *Store) GetShare(ctx context.Context, id string) (store.Share, bool, error) {
	sh := store.Share{ID: id}
	var created int64
	err := s.db.QueryRowContext(ctx, `SELECT channel, thread, private, text, created FROM shares WHERE id = ?`, id).
		Scan(&sh.Channel, &sh.Thread, &sh.Private, &sh.Text, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Share{}, false, nil
	}
	if err != nil {
		return store.Share{}, false, fmt.Errorf("get share %s: %w", id, err)
	}
	sh.Created = fromMicros(created)
	return sh, true, nil
}

// ClaimReply implements store.Store.
func (s *Store) ClaimReply(ctx context.Context, channel, thread, owner string, ttl time.Duration) (bool, error) {
	ok, err := s.claim(ctx, ttl, `INSERT INTO reply_claims (channel, thread, owner, claimed_at, expires_at)
		SELECT ?1, ?2, ?3, ?4, ?5
		WHERE NOT EXISTS (SELECT 1 FROM replies WHERE channel = ?1 AND thread = ?2)
		ON CONFLICT (channel, thread) DO UPDATE SET
			owner = excluded.owner, claimed_at = excluded.claimed_at, expires_at = excluded.expires_at
		WHERE reply_claims.owner = excluded.owner OR reply_claims.expires_at <= excluded.claimed_at`,
		channel, thread, owner)
	if err != nil {
		return false, fmt.Errorf("claim reply in %s/%s: %w", channel, thread, err)
	}
	return ok, nil
}

// Claim implements store.Store.
func (s *Store) Claim(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	ok, err := s.claim(ctx, ttl, `INSERT INTO claims (key, owner, claimed_at, expires_at) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (key) DO UPDATE SET
			owner = excluded.owner, claimed_at = excluded.claimed_at, expires_at = excluded.expires_at
		WHERE claims.expires_at <= excluded.claimed_at`,
		key, owner)
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", key, err)
	}
	return ok, nil
}

// ClaimDigest implements store.Store.
func (s *Store) ClaimDigest(ctx context.Context, target, week, owner string, lease time.Duration) (bool, error) {
	ok, err := s.claim(ctx, lease, `INSERT INTO digests (target, week, claimed_by, claimed_at, lease_until)
		VALUES (?1, ?2, ?3, ?4, ?5)
		ON CONFLICT (target, week) DO UPDATE SET
			claimed_by = excluded.claimed_by, claimed_at = excluded.claimed_at, lease_until = excluded.lease_until
		WHERE digests.posted_at IS NULL
			AND (digests.claimed_by = excluded.claimed_by OR digests.lease_until <= excluded.claimed_at)`,
		target, week, owner)
	if err != nil {
		return false, fmt.Errorf("claim digest %s/%s: %w", target, week, err)
	}
	return ok, nil
}

// claim runs an upsert whose arguments are args followed by now and now+ttl,
// and reports whether it wrote a row.
func (s *Store) claim(ctx context.Context, ttl time.Duration, query string, args ...any) (bool, error) {
	if ttl <= 0 {
		return false, fmt.Errorf("ttl %v is not positive", ttl)
	}
	now := s.now()
	res, err := s.db.ExecContext(ctx, query, append(args, micros(now), micros(now.Add(ttl)))...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// MarkDigestPosted implements store.Store.
func (s *Store) MarkDigestPosted(ctx context.Context, target, week, owner, messageTS string, at time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO digests (target, week, claimed_by, claimed_at, lease_until, posted_at, message_ts)
		VALUES (?1, ?2, ?3, ?4, ?4, ?4, ?5)
		ON CONFLICT (target, week) DO UPDATE SET
			claimed_by = excluded.claimed_by, posted_at = excluded.posted_at, message_ts = excluded.message_ts
		WHERE digests.posted_at IS NULL`,
		target, week, owner, micros(at), messageTS)
	if err != nil {
		return fmt.Errorf("mark digest %s/%s posted: %w", target, week, err)
	}
	return nil
}

// DigestPosted implements store.Store.
func (s *Store) DigestPosted(ctx context.Context, target, week string) (store.DigestRecord, bool, error) {
	r := store.DigestRecord{Target: target, Week: week}
	var (
		claimedAt int64
		postedAt  sql.NullInt64
	)
	err := s.db.QueryRowContext(ctx, `SELECT claimed_by, claimed_at, posted_at, message_ts FROM digests WHERE target = ? AND week = ?`,
		target, week).Scan(&r.ClaimedBy, &claimedAt, &postedAt, &r.MessageTS)
	if errors.Is(err, sql.ErrNoRows) {
		return store.DigestRecord{}, false, nil
	}
	if err != nil {
		return store.DigestRecord{}, false, fmt.Errorf("get digest %s/%s: %w", target, week, err)
	}
	r.ClaimedAt = fromMicros(claimedAt)
	if postedAt.Valid {
		t := fromMicros(postedAt.Int64)
		r.PostedAt = &t
	}
	return r, r.PostedAt != nil, nil
}

// InboxPut implements store.Store.
func (s *Store) InboxPut(ctx context.Context, item store.InboxItem, lease time.Duration) (bool, error) {
	ok, err := s.claim(ctx, lease, `INSERT INTO inbox (key, kind, payload, owner, received, leased_until)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (key) DO NOTHING`,
		item.Key, item.Kind, blob(item.Payload), item.Owner)
	if err != nil {
		return false, fmt.Errorf("put %s in inbox: %w", item.Key, err)
	}
	return ok, nil
}

// InboxDone implements store.Store.
func (s *Store) InboxDone(ctx context.Context, key string) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE inbox SET done = 1, payload = X'' WHERE key = ?`, key); err != nil {
		return fmt.Errorf("mark %s done in inbox: %w", key, err)
	}
	return nil
}

// InboxPurge implements store.Store.
func (s *Store) InboxPurge(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM inbox WHERE received < ?`, micros(before))
	if err != nil {
		return 0, fmt.Errorf("purge inbox before %s: %w", before.UTC().Format(time.RFC3339), err)
	}
	return res.RowsAffected()
}

// InboxRenew implements store.Store.
func (s *Store) InboxRenew(ctx context.Context, owner string, lease time.Duration) (int64, error) {
	if lease <= 0 {
		return 0, fmt.Errorf("renew inbox leases of %s: lease %v is not positive", owner, lease)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE inbox SET leased_until = ? WHERE owner = ? AND done = 0`, micros(s.now().Add(lease)), owner)
	if err != nil {
		return 0, fmt.Errorf("renew inbox leases of %s: %w", owner, err)
	}
	return res.RowsAffected()
}

// InboxOrphans implements store.Store. Its transaction starts with BEGIN
// IMMEDIATE, so it holds the write lock from its first read: whoever takes
// it next sees the new leases.
func (s *Store) InboxOrphans(ctx context.Context, owner string, lease time.Duration, limit int) ([]store.InboxItem, error) {
	out, err := s.inboxOrphans(ctx, owner, lease, limit)
	if err != nil {
		return nil, fmt.Errorf("take inbox orphans for %s: %w", owner, err)
	}
	return out, nil
}

func (s *Store) inboxOrphans(ctx context.Context, owner string, lease time.Duration, limit int) ([]store.InboxItem, error) {
	if lease <= 0 {
		return nil, fmt.Errorf("lease %v is not positive", lease)
	}
	if limit <= 0 {
		return nil, nil
	}
	now := s.now()
	var out []store.InboxItem
	err := s.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `UPDATE inbox SET owner = ?1, leased_until = ?2
			WHERE key IN (
				SELECT key FROM inbox WHERE done = 0 AND leased_until <= ?3
				ORDER BY received, key LIMIT ?4)
			RETURNING key, kind, payload, owner, received`,
			owner, micros(now.Add(lease)), micros(now), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				it       store.InboxItem
				received int64
			)
			if err := rows.Scan(&it.Key, &it.Kind, &it.Payload, &it.Owner, &received); err != nil {
				return err
			}
			it.Received, it.Payload = fromMicros(received), nilIfEmpty(it.Payload)
			out = append(out, it)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	// RETURNING gives the rows in no particular order.
	slices.SortFunc(out, func(a, b store.InboxItem) int {
		if c := a.Received.Compare(b.Received); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out, nil
}

// PutTeamCase implements store.Store. Its transaction starts with BEGIN
// IMMEDIATE, so puts and deletes, from this process or another, take turns
// and each raises the version once.
func (s *Store) PutTeamCase(ctx context.Context, c store.TeamCase) (store.TeamCase, error) {
	c = c.Clean()
	now := s.now()
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = now
	}
	var out store.TeamCase
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var version int64
		if err := tx.QueryRowContext(ctx, `UPDATE team_cases_version SET version = version + 1 WHERE one = 1 RETURNING version`).Scan(&version); err != nil {
			return err
		}
		row := tx.QueryRowContext(ctx, `INSERT INTO team_cases
			(id, body, channel, private, created_by, updated_by, created_at, updated_at, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET
				body = excluded.body, channel = excluded.channel, private = excluded.private,
				updated_by = excluded.updated_by, updated_at = excluded.updated_at, version = excluded.version
			RETURNING `+teamCaseColumns,
			c.ID, blob(c.Case), c.Channel, c.Private, c.CreatedBy, c.UpdatedBy, micros(c.CreatedAt), micros(c.UpdatedAt), version)
		var err error
		out, err = scanTeamCase(row.Scan)
		return err
	})
	if err != nil {
		return store.TeamCase{}, fmt.Errorf("put team case %s: %w", c.ID, rejected(err))
	}
	return out, nil
}

const teamCaseColumns = `id, body, channel, private, created_by, updated_by, created_at, updated_at, version`

func scanTeamCase(scan func(...any) error) (store.TeamCase, error) {
	var (
		c                store.TeamCase
		created, updated int64
	)
	if err := scan(&c.ID, &c.Case, &c.Channel, &c.Private, &c.CreatedBy, &c.UpdatedBy, &created, &updated, &c.Version); err != nil {
		return store.TeamCase{}, err
	}
	c.CreatedAt, c.UpdatedAt = fromMicros(created), fromMicros(updated)
	return c, nil
}

// TeamCase implements store.Store.
func (s *Store) TeamCase(ctx context.Context, id string) (store.TeamCase, bool, error) {
	c, err := scanTeamCase(s.db.QueryRowContext(ctx, `SELECT `+teamCaseColumns+` FROM team_cases WHERE id = ?`, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return store.TeamCase{}, false, nil
	}
	if err != nil {
		return store.TeamCase{}, false, fmt.Errorf("get team case %s: %w", id, err)
	}
	return c, true, nil
}

// TeamCases implements store.Store.
func (s *Store) TeamCases(ctx context.Context) ([]store.TeamCase, error) {
	out, err := s.teamCases(ctx)
	if err != nil {
		return nil, fmt.Errorf("list team cases: %w", err)
	}
	return out, nil
}

func (s *Store) teamCases(ctx context.Context) ([]store.TeamCase, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+teamCaseColumns+` FROM team_cases ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.TeamCase
	for rows.Next() {
		c, err := scanTeamCase(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// DeleteTeamCase implements store.Store.
func (s *Store) DeleteTeamCase(ctx context.Context, id string) (bool, error) {
	var deleted bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM team_cases WHERE id = ?`, id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		deleted = true
		_, err = tx.ExecContext(ctx, `UPDATE team_cases_version SET version = version + 1 WHERE one = 1`)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("delete team case %s: %w", id, err)
	}
	return deleted, nil
}

// TeamCasesVersion implements store.Store.
func (s *Store) TeamCasesVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.db.QueryRowContext(ctx, `SELECT version FROM team_cases_version WHERE one = 1`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read team cases version: %w", err)
	}
	return v, nil
}

// Purge implements store.Store.
func (s *Store) Purge(ctx context.Context, before time.Time) (int64, error) {
	b, now := micros(before), micros(s.now())
	var total int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, q := range []struct {
			query string
			args  []any
		}{
			{`DELETE FROM suggestions WHERE at < ?`, []any{b}},
			{`DELETE FROM feedback WHERE at < ?`, []any{b}},
			{`DELETE FROM replies WHERE updated < ?`, []any{b}},
			{`DELETE FROM shares WHERE created < ?`, []any{b}},
			{`DELETE FROM inbox WHERE received < ?`, []any{b}},
			{`DELETE FROM reply_claims WHERE expires_at <= ?`, []any{now}},
			{`DELETE FROM claims WHERE expires_at <= ?`, []any{now}},
		} {
			res, err := tx.ExecContext(ctx, q.query, q.args...)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			total += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("purge before %s: %w", before.UTC().Format(time.RFC3339), err)
	}
	return total, nil
}

// Ping implements store.Store.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("ping sqlite store: %w", err)
	}
	return nil
}

// Close implements store.Store.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close sqlite store: %w", err)
	}
	return nil
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// blob returns p, or an empty one for nil: a nil slice would be NULL.
func blob(p []byte) []byte {
	if p == nil {
		return []byte{}
	}
	return p
}

func nilIfEmpty(p []byte) []byte {
	if len(p) == 0 {
		return nil
	}
	return p
}

// scoredCase is how a store.ScoredCase is kept in JSON.
type scoredCase struct {
	CaseID string  `json:"case_id"`
	Score  float64 `json:"score"`
}

func encodeCases(cs []store.ScoredCase) []scoredCase {
	out := make([]scoredCase, len(cs))
	for i, c := range cs {
		out[i] = scoredCase{CaseID: c.CaseID, Score: c.Score}
	}
	return out
}

func decodeCases(cs []scoredCase) []store.ScoredCase {
	if len(cs) == 0 {
		return nil
	}
	out := make([]store.ScoredCase, len(cs))
	for i, c := range cs {
		out[i] = store.ScoredCase{CaseID: c.CaseID, Score: c.Score}
	}
	return out
}

// jsonList encodes a list as a JSON array, "[]" when empty.
func jsonList[T any](v []T) (string, error) {
	if len(v) == 0 {
		return "[]", nil
	}
	data, err := json.Marshal(v)
	return string(data), err
}

// unmarshalList decodes a JSON array, leaving v nil when it is empty.
func unmarshalList[T any](data string, v *[]T) error {
	if err := json.Unmarshal([]byte(data), v); err != nil {
		return err
	}
	if len(*v) == 0 {
		*v = nil
	}
	return nil
}
