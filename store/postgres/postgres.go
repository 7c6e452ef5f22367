// Package postgres is the server-backed store.Store, for several replicas
// of the bot sharing one PostgreSQL database through pgx.
//
// Uniqueness is enforced by constraints and INSERT ... ON CONFLICT, so every
// operation is safe across processes. Migrations run under an advisory lock,
// so replicas may start at once.
package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/incidentbot/incidentbot/store"
	"github.com/incidentbot/incidentbot/store/internal/migrate"
)

//go:embed migrations/*.sql
var migrations embed.FS

// lockSpace is the first key of every advisory lock this package takes, so
// that its locks do not meet other applications' in the same database. The
// second key says what is locked.
const lockSpace = 0x1bc1d0

// Store is a store.Store in a PostgreSQL database.
type Store struct {
	pool *pgxpool.Pool
	now  func() time.Time
	// upTo, when positive, is the last migration applied: tests use it to
	// build a schema as an older version left it.
	upTo   int
	schema string // WithSchema's

	log            *slog.Logger
	connectTimeout time.Duration
	lockTimeout    time.Duration
}

// Bounds on the waits of Open.
const (
	// DefaultConnectTimeout bounds connecting, when the URL sets no
	// connect_timeout: a server that accepts the connection and never
	// answers fails Open after it instead of hanging.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultLockTimeout bounds the wait for the migration lock, which
	// another replica holds while it migrates the schema.
	DefaultLockTimeout = 2 * time.Minute
)

// WithLogger logs each step of Open (connecting, waiting for the migration
// lock, migrating); the default discards them.
func WithLogger(l *slog.Logger) Option {
	return func(s *Store) { s.log = l }
}

// WithConnectTimeout sets the bound on connecting used when the URL has no
// connect_timeout; DefaultConnectTimeout when not set.
func WithConnectTimeout(d time.Duration) Option {
	return func(s *Store) { s.connectTimeout = d }
}

// WithLockTimeout sets the bound on the wait for the migration lock;
// DefaultLockTimeout when not set.
func WithLockTimeout(d time.Duration) Option {
	return func(s *Store) { s.lockTimeout = d }
}

var _ store.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithSchema keeps the store's tables in the named schema, created if it is
// missing (which needs the CREATE privilege on the database), instead of
// the first schema of the connection's search_path. It sets search_path for
// every connection and wins over one in the URL. Use it to share a
// database with other applications: the store's table names (suggestions,
// feedback, replies, claims, inbox…) are plain.
func WithSchema(name string) Option {
	return func(s *Store) { s.schema = name }
}

// WithNow sets the clock that claims and leases are measured on; the default
// is time.Now. Replicas compare each other's leases on their own clocks, so
// keep them in sync (NTP) and make leases much longer than the skew.
func WithNow(now func() time.Time) Option {
	return func(s *Store) { s.now = now }
}

// Open connects to the database at url (a postgres:// URL or a keyword/value
// connection string; a search_path parameter selects the schema) and brings
// its schema up to date.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parse error may quote the URL, password included.
		return nil, errors.New("open postgres store: cannot parse the database URL")
	}
	s := &Store{now: time.Now, log: slog.New(slog.DiscardHandler), connectTimeout: DefaultConnectTimeout, lockTimeout: DefaultLockTimeout}
	for _, o := range opts {
		o(s)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = s.connectTimeout
	}
	if s.schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{s.schema}.Sanitize()
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	s.pool = pool
	start := time.Now()
	s.log.Info("connecting to PostgreSQL", "host", cfg.ConnConfig.Host, "port", cfg.ConnConfig.Port, "timeout", cfg.ConnConfig.ConnectTimeout.String())
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		if ctx.Err() == nil && time.Since(start) >= cfg.ConnConfig.ConnectTimeout {
			return nil, fmt.Errorf("open postgres store: no answer within %v: is the address that of a PostgreSQL server that accepts connections? (connect_timeout in the URL sets the wait): %w",
				cfg.ConnConfig.ConnectTimeout, err)
		}
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	if s.schema != "" {
		// Only a missing schema is created: CREATE SCHEMA needs a
		// privilege that using an existing one does not.
		var exists bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, s.schema).Scan(&exists)
		if err == nil && !exists {
			_, err = pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{s.schema}.Sanitize())
		}
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("open postgres store: schema %q: %w", s.schema, err)
		}
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	return s, nil
}

// migrate applies the embedded migrations that the schema lacks, each in
// its own transaction, while holding a session advisory lock on the schema
// so that replicas starting at once apply each exactly once.
func (s *Store) migrate(ctx context.Context) (err error) {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	ms, err := migrate.Load(dir)
	if err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	const key = `hashtext(coalesce(current_schema(), ''))`
	s.log.Info("taking the schema migration lock", "timeout", s.lockTimeout.String())
	lockCtx, cancel := context.WithTimeout(ctx, s.lockTimeout)
	_, err = conn.Exec(lockCtx, `SELECT pg_advisory_lock($1, `+key+`)`, lockSpace)
	timedOut := lockCtx.Err() != nil && ctx.Err() == nil
	cancel()
	if timedOut {
		conn.Conn().Close(context.WithoutCancel(ctx)) // the lock may yet be granted to it
		return fmt.Errorf("take migration lock: not granted within %v: another replica is migrating the schema or holds the lock; see pg_locks where locktype = 'advisory'", s.lockTimeout)
	}
	if err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	defer func() {
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, `+key+`)`, lockSpace); uerr != nil {
			// A connection that still holds the lock must not go back to
			// the pool; closing it releases the lock.
			conn.Conn().Close(context.WithoutCancel(ctx))
			err = errors.Join(err, fmt.Errorf("release migration lock: %w", uerr))
		}
	}()
	if err := adoptOldTable(ctx, conn.Conn()); err != nil {
		return fmt.Errorf("move %s to %s: %w", migrate.OldTable, migrate.Table, err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+migrate.Table+` (
		version    integer     NOT NULL PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("create %s: %w", migrate.Table, err)
	}
	var have int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+migrate.Table).Scan(&have); err != nil {
		return fmt.Errorf("read %s: %w", migrate.Table, err)
	}
	if err := migrate.Check(have, ms); err != nil {
		return err
	}
	applied := 0
	defer func() {
		if err == nil {
			s.log.Info("database schema up to date", "migrations_applied", applied)
		}
	}()
	for _, m := range ms {
		if s.upTo > 0 && m.Version > s.upTo {
			break
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var done bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+migrate.Table+` WHERE version = $1)`, m.Version).Scan(&done); err != nil || done {
				return err
			}
			s.log.Info("applying database migration", "migration", m.Name)
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			applied++
			_, err := tx.Exec(ctx, `INSERT INTO `+migrate.Table+` (version) VALUES ($1)`, m.Version)
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// adoptOldTable moves the migrations recorded by versions before the
// table's prefix into migrate.Table. Only a schema_migrations with exactly
// the columns those versions made (version integer, applied_at timestamptz)
// beside their suggestions table is theirs; another tool's is left alone.
func adoptOldTable(ctx context.Context, conn *pgx.Conn) error {
	var ours bool
	err := conn.QueryRow(ctx, `SELECT coalesce(
		(SELECT array_agg(column_name || ':' || data_type ORDER BY column_name) FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1)
			= ARRAY['applied_at:timestamp with time zone', 'version:integer']::text[]
		AND EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'suggestions'), false)`,
		migrate.OldTable).Scan(&ours)
	if err != nil || !ours {
		return err
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, q := range []string{
			`CREATE TABLE IF NOT EXISTS ` + migrate.Table + ` (
				version    integer     NOT NULL PRIMARY KEY,
				applied_at timestamptz NOT NULL DEFAULT now()
			)`,
			`INSERT INTO ` + migrate.Table + ` (version, applied_at) SELECT version, applied_at FROM ` + migrate.OldTable + ` ON CONFLICT DO NOTHING`,
			`DROP TABLE ` + migrate.OldTable,
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
}

// RecordSuggestion implements store.Store.
func (s *Store) RecordSuggestion(ctx context.Context, sg store.Suggestion) error {
	sg = sg.Clean()
	cases, err := encodeCases(sg.Cases)
	if err != nil {
		return fmt.Errorf("record suggestion %s: %w", sg.Key, err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO suggestions
		(key, at, channel, private, thread, source, lang, symptoms, components, cases)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (key) DO NOTHING`,
		sg.Key, sg.Time, sg.Channel, sg.Private, sg.Thread, string(sg.Source), sg.Lang,
		array(sg.Symptoms), array(sg.Components), cases)
	if err != nil {
		return fmt.Errorf("record suggestion %s: %w", sg.Key, rejected(err))
	}
	return nil
}

// RecordFeedback implements store.Store.
func (s *Store) RecordFeedback(ctx context.Context, f store.Feedback) (bool, error) {
	f = f.Clean()
	tag, err := s.pool.Exec(ctx, `INSERT INTO feedback
		(channel, message, case_id, user_id, at, private, vote, query, team)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (channel, message, case_id, user_id) DO UPDATE SET
			at = excluded.at, private = excluded.private, vote = excluded.vote, query = excluded.query, team = excluded.team
		WHERE feedback.vote <> excluded.vote`,
		f.Channel, f.Message, f.CaseID, f.User, f.Time, f.Private, string(f.Vote), f.Query, f.Team)
	if err != nil {
		return false, fmt.Errorf("record feedback on %s: %w", f.CaseID, rejected(err))
	}
	return tag.RowsAffected() > 0, nil
}

// rejected marks errors PostgreSQL raises for the values of a write (data
// exceptions, class 22, and integrity violations, class 23) with
// store.ErrRejected: trying again will not help.
func rejected(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23")) {
		return fmt.Errorf("%w: %w", store.ErrRejected, err)
	}
	return err
}

// Suggestions implements store.Store.
func (s *Store) Suggestions(ctx context.Context, from, to time.Time) ([]store.Suggestion, error) {
	rows, err := s.pool.Query(ctx, `SELECT key, at, channel, private, thread, source, lang, symptoms, components, cases
		FROM suggestions WHERE at >= $1 AND at < $2 ORDER BY at, key`, from, to)
	if err != nil {
		return nil, fmt.Errorf("list suggestions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Suggestion, error) {
		var (
			sg     store.Suggestion
			source string
			cases  []byte
		)
		if err := row.Scan(&sg.Key, &sg.Time, &sg.Channel, &sg.Private, &sg.Thread, &source, &sg.Lang, &sg.Symptoms, &sg.Components, &cases); err != nil {
			return sg, err
		}
		sg.Time, sg.Source = sg.Time.UTC(), store.Source(source)
		sg.Symptoms, sg.Components = nilIfEmpty(sg.Symptoms), nilIfEmpty(sg.Components)
		var err error
		if sg.Cases, err = decodeCases(cases); err != nil {
			return sg, fmt.Errorf("suggestion %s cases: %w", sg.Key, err)
		}
		return sg, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list suggestions: %w", err)
	}
	return nilIfEmpty(out), nil
}

// Feedback implements store.Store.
func (s *Store) Feedback(ctx context.Context, from, to time.Time) ([]store.Feedback, error) {
	rows, err := s.pool.Query(ctx, `SELECT at, team, channel, private, message, user_id, case_id, vote, query
		FROM feedback WHERE at >= $1 AND at < $2 ORDER BY at, channel, message, case_id, user_id`, from, to)
	if err != nil {
		return nil, fmt.Errorf("list feedback: %w", err)
	}
	out, err := collectFeedback(rows)
	if err != nil {
		return nil, fmt.Errorf("list feedback: %w", err)
	}
	return out, nil
}

// Votes implements store.Store.
func (s *Store) Votes(ctx context.Context, team string, since time.Time, limit int) ([]store.Feedback, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT at, team, channel, private, message, user_id, case_id, vote, query
		FROM feedback WHERE team = $1 AND at >= $2 ORDER BY at DESC, channel, message, case_id, user_id LIMIT $3`,
		team, since, limit)
	if err != nil {
		return nil, fmt.Errorf("list votes: %w", err)
	}
	out, err := collectFeedback(rows)
	if err != nil {
		return nil, fmt.Errorf("list votes: %w", err)
	}
	return out, nil
}

func collectFeedback(rows pgx.Rows) ([]store.Feedback, error) {
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Feedback, error) {
		var (
			f    store.Feedback
			vote string
		)
		err := row.Scan(&f.Time, &f.Team, &f.Channel, &f.Private, &f.Message, &f.User, &f.CaseID, &vote, &f.Query)
		f.Time, f.Vote = f.Time.UTC(), store.Vote(vote)
		return f, err
	})
	return nilIfEmpty(out), err
}

// CaseFeedback implements store.Store.
func (s *Store) CaseFeedback(ctx context.Context, caseID string) (helpful, notRelevant int, err error) {
	err = s.pool.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE vote = 'helpful'),
			count(*) FILTER (WHERE vote = 'not_relevant')
		FROM feedback WHERE case_id = $1`, caseID).Scan(&helpful, &notRelevant)
	if err != nil {
		return 0, 0, fmt.Errorf("count feedback on %s: %w", caseID, err)
	}
	return helpful, notRelevant, nil
}

// PutReply implements store.Store.
func (s *Store) PutReply(ctx context.Context, r store.Reply) error {
	r = r.Clean()
	_, err := s.pool.Exec(ctx, `INSERT INTO replies (channel, thread, reply_ts, lang, case_ids, text, updated)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (channel, thread) DO UPDATE SET
			reply_ts = excluded.reply_ts, lang = excluded.lang, case_ids = excluded.case_ids, text = excluded.text,
			updated = excluded.updated`,
		r.Channel, r.Thread, r.ReplyTS, r.Lang, array(r.CaseIDs), r.Text, r.Updated)
	if err != nil {
		return fmt.Errorf("put reply in %s/%s: %w", r.Channel, r.Thread, err)
	}
	return nil
}

// GetReply implements store.Store.
func (s *Store) GetReply(ctx context.Context, channel, thread string) (store.Reply, bool, error) {
	r := store.Reply{Channel: channel, Thread: thread}
	err := s.pool.QueryRow(ctx, `SELECT reply_ts, lang, case_ids, text, updated FROM replies WHERE channel = $1 AND thread = $2`,
		channel, thread).Scan(&r.ReplyTS, &r.Lang, &r.CaseIDs, &r.Text, &r.Updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Reply{}, false, nil
	}
	if err != nil {
		return store.Reply{}, false, fmt.Errorf("get reply in %s/%s: %w", channel, thread, err)
	}
	r.CaseIDs, r.Updated = nilIfEmpty(r.CaseIDs), r.Updated.UTC()
	return r, true, nil
}

// PutShare implements store.Store.
func (s *Store) PutShare(ctx context.Context, sh store.Share) error {
	sh = sh.Clean()
	_, err := s.pool.Exec(ctx, `INSERT INTO shares (id, channel, thread, private, text, created)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (id) DO UPDATE SET channel = excluded.channel, thread = excluded.thread,
			private = excluded.private, text = excluded.text, created = excluded.created`,
		sh.ID, sh.Channel, sh.Thread, sh.Private, sh.Text, sh.Created)
	if err != nil {
		return fmt.Errorf("put share %s: %w", sh.ID, rejected(err))
	}
	return nil
}

// GetShare implements store.Store.
func (s *Store) GetShare(ctx context.Context, id string) (store.Share, bool, error) {
	sh := store.Share{ID: id}
	err := s.pool.QueryRow(ctx, `SELECT channel, thread, private, text, created FROM shares WHERE id = $1`, id).
		Scan(&sh.Channel, &sh.Thread, &sh.Private, &sh.Text, &sh.Created)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Share{}, false, nil
	}
	if err != nil {
		return store.Share{}, false, fmt.Errorf("get share %s: %w", id, err)
	}
	sh.Created = sh.Created.UTC()
	return sh, true, nil
}

// ClaimReply implements store.Store.
func (s *Store) ClaimReply(ctx context.Context, channel, thread, owner string, ttl time.Duration) (bool, error) {
	ok, err := s.claim(ctx, s.pool, ttl, `INSERT INTO reply_claims (channel, thread, owner, claimed_at, expires_at)
		SELECT $1, $2, $3, $4::timestamptz, $5::timestamptz
		WHERE NOT EXISTS (SELECT 1 FROM replies WHERE channel = $1 AND thread = $2)
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
	ok, err := s.claim(ctx, s.pool, ttl, `INSERT INTO claims (key, owner, claimed_at, expires_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (key) DO UPDATE SET
			owner = excluded.owner, claimed_at = excluded.claimed_at, expires_at = excluded.expires_at
		WHERE claims.expires_at <= excluded.claimed_at`,
		key, owner)
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", key, err)
	}
	return ok, nil
}

// ClaimDigest implements store.Store. The lease row is what makes one
// replica compose: the upsert writes it only when the digest is not posted
// and no other owner holds a live lease. The transaction advisory lock on
// (target, week), tried without waiting, only makes a replica that claims
// at the same instant lose at once instead of queueing on the row; it is
// released when the claim's transaction ends, long before composing.
func (s *Store) ClaimDigest(ctx context.Context, target, week, owner string, lease time.Duration) (bool, error) {
	var won bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var locked bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1, hashtext($2 || '/' || $3))`,
			lockSpace, target, week).Scan(&locked); err != nil || !locked {
			return err
		}
		var err error
		won, err = s.claim(ctx, tx, lease, `INSERT INTO digests (target, week, claimed_by, claimed_at, lease_until)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (target, week) DO UPDATE SET
				claimed_by = excluded.claimed_by, claimed_at = excluded.claimed_at, lease_until = excluded.lease_until
			WHERE digests.posted_at IS NULL
				AND (digests.claimed_by = excluded.claimed_by OR digests.lease_until <= excluded.claimed_at)`,
			target, week, owner)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("claim digest %s/%s: %w", target, week, err)
	}
	return won, nil
}

// execer is a pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// claim runs an upsert whose arguments are args followed by now and now+ttl,
// and reports whether it wrote a row.
func (s *Store) claim(ctx context.Context, db execer, ttl time.Duration, query string, args ...any) (bool, error) {
	if ttl <= 0 {
		return false, fmt.Errorf("ttl %v is not positive", ttl)
	}
	now := s.now()
	tag, err := db.Exec(ctx, query, append(args, now, now.Add(ttl))...)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() > 0, nil
}

// MarkDigestPosted implements store.Store.
func (s *Store) MarkDigestPosted(ctx context.Context, target, week, owner, messageTS string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO digests (target, week, claimed_by, claimed_at, lease_until, posted_at, message_ts)
		VALUES ($1, $2, $3, $4, $4, $4, $5)
		ON CONFLICT (target, week) DO UPDATE SET
			claimed_by = excluded.claimed_by, posted_at = excluded.posted_at, message_ts = excluded.message_ts
		WHERE digests.posted_at IS NULL`,
		target, week, owner, at, messageTS)
	if err != nil {
		return fmt.Errorf("mark digest %s/%s posted: %w", target, week, err)
	}
	return nil
}

// DigestPosted implements store.Store.
func (s *Store) DigestPosted(ctx context.Context, target, week string) (store.DigestRecord, bool, error) {
	r := store.DigestRecord{Target: target, Week: week}
	err := s.pool.QueryRow(ctx, `SELECT claimed_by, claimed_at, posted_at, message_ts FROM digests WHERE target = $1 AND week = $2`,
		target, week).Scan(&r.ClaimedBy, &r.ClaimedAt, &r.PostedAt, &r.MessageTS)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.DigestRecord{}, false, nil
	}
	if err != nil {
		return store.DigestRecord{}, false, fmt.Errorf("get digest %s/%s: %w", target, week, err)
	}
	r.ClaimedAt = r.ClaimedAt.UTC()
	if r.PostedAt != nil {
		t := r.PostedAt.UTC()
		r.PostedAt = &t
	}
	return r, r.PostedAt != nil, nil
}

// InboxPut implements store.Store.
func (s *Store) InboxPut(ctx context.Context, item store.InboxItem, lease time.Duration) (bool, error) {
	ok, err := s.claim(ctx, s.pool, lease, `INSERT INTO inbox (key, kind, payload, owner, received, leased_until)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (key) DO NOTHING`,
		item.Key, item.Kind, bytea(item.Payload), item.Owner)
	if err != nil {
		return false, fmt.Errorf("put %s in inbox: %w", item.Key, err)
	}
	return ok, nil
}

// InboxDone implements store.Store.
func (s *Store) InboxDone(ctx context.Context, key string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE inbox SET done = true, payload = '' WHERE key = $1`, key); err != nil {
		return fmt.Errorf("mark %s done in inbox: %w", key, err)
	}
	return nil
}

// InboxPurge implements store.Store.
func (s *Store) InboxPurge(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM inbox WHERE received < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("purge inbox before %s: %w", before.UTC().Format(time.RFC3339), err)
	}
	return tag.RowsAffected(), nil
}

// InboxRenew implements store.Store.
func (s *Store) InboxRenew(ctx context.Context, owner string, lease time.Duration) (int64, error) {
	if lease <= 0 {
		return 0, fmt.Errorf("renew inbox leases of %s: lease %v is not positive", owner, lease)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE inbox SET leased_until = $1 WHERE owner = $2 AND NOT done`, s.now().Add(lease), owner)
	if err != nil {
		return 0, fmt.Errorf("renew inbox leases of %s: %w", owner, err)
	}
	return tag.RowsAffected(), nil
}

// InboxOrphans implements store.Store. It locks the rows it takes with FOR
// UPDATE SKIP LOCKED, so replicas calling it at once take different rows
// without waiting for each other. The locking SELECT is a materialized CTE,
// not the usual "WHERE key IN (SELECT ... LIMIT n FOR UPDATE SKIP LOCKED)":
// PostgreSQL plans an IN subquery as a join and may run it again for each
// outer row, and each run skips the rows already updated and takes more, so
// LIMIT would not bound what is taken (PostgreSQL bug #15715, which it
// answers is expected). A WITH query runs once.
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
	rows, err := s.pool.Query(ctx, `WITH orphans AS MATERIALIZED (
			SELECT key FROM inbox WHERE NOT done AND leased_until <= $3
			ORDER BY received, key LIMIT $4
			FOR UPDATE SKIP LOCKED
		)
		UPDATE inbox SET owner = $1, leased_until = $2
		FROM orphans WHERE inbox.key = orphans.key
		RETURNING inbox.key, inbox.kind, inbox.payload, inbox.owner, inbox.received`,
		owner, now.Add(lease), now, limit)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.InboxItem, error) {
		var it store.InboxItem
		err := row.Scan(&it.Key, &it.Kind, &it.Payload, &it.Owner, &it.Received)
		it.Received, it.Payload = it.Received.UTC(), nilIfEmpty(it.Payload)
		return it, err
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
	return nilIfEmpty(out), nil
}

// PutTeamCase implements store.Store. Raising the version row first takes
// its row lock, which orders the puts and deletes of every replica: each
// raises the version once, and versions commit in order.
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
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var version int64
		if err := tx.QueryRow(ctx, `UPDATE team_cases_version SET version = version + 1 WHERE one = 1 RETURNING version`).Scan(&version); err != nil {
			return err
		}
		if err := notifyTeamCases(ctx, tx); err != nil {
			return err
		}
		row := tx.QueryRow(ctx, `INSERT INTO team_cases
			(id, body, channel, private, created_by, updated_by, created_at, updated_at, version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (id) DO UPDATE SET
				body = excluded.body, channel = excluded.channel, private = excluded.private,
				updated_by = excluded.updated_by, updated_at = excluded.updated_at, version = excluded.version
			RETURNING `+teamCaseColumns,
			c.ID, bytea(c.Case), c.Channel, c.Private, c.CreatedBy, c.UpdatedBy, c.CreatedAt, c.UpdatedAt, version)
		var err error
		out, err = scanTeamCase(row)
		return err
	})
	if err != nil {
		return store.TeamCase{}, fmt.Errorf("put team case %s: %w", c.ID, rejected(err))
	}
	return out, nil
}

const teamCaseColumns = `id, body, channel, private, created_by, updated_by, created_at, updated_at, version`

func scanTeamCase(row pgx.Row) (store.TeamCase, error) {
	var c store.TeamCase
	if err := row.Scan(&c.ID, &c.Case, &c.Channel, &c.Private, &c.CreatedBy, &c.UpdatedBy, &c.CreatedAt, &c.UpdatedAt, &c.Version); err != nil {
		return store.TeamCase{}, err
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, nil
}

// TeamCase implements store.Store.
func (s *Store) TeamCase(ctx context.Context, id string) (store.TeamCase, bool, error) {
	c, err := scanTeamCase(s.pool.QueryRow(ctx, `SELECT `+teamCaseColumns+` FROM team_cases WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.TeamCase{}, false, nil
	}
	if err != nil {
		return store.TeamCase{}, false, fmt.Errorf("get team case %s: %w", id, err)
	}
	return c, true, nil
}

// TeamCases implements store.Store.
func (s *Store) TeamCases(ctx context.Context) ([]store.TeamCase, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+teamCaseColumns+` FROM team_cases ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list team cases: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.TeamCase, error) { return scanTeamCase(row) })
	if err != nil {
		return nil, fmt.Errorf("list team cases: %w", err)
	}
	return nilIfEmpty(out), nil
}

// DeleteTeamCase implements store.Store. Like PutTeamCase it raises the
// version row first, so that its version commits in order.
func (s *Store) DeleteTeamCase(ctx context.Context, id string) (bool, error) {
	var deleted bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE team_cases_version SET version = version + 1 WHERE one = 1`); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM team_cases WHERE id = $1`, id)
		if err != nil {
			return err
		}
		deleted = tag.RowsAffected() > 0
		if !deleted {
			return errNothing // roll the version back
		}
		return notifyTeamCases(ctx, tx)
	})
	if errors.Is(err, errNothing) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete team case %s: %w", id, err)
	}
	return deleted, nil
}

// teamCasesChannel is the LISTEN/NOTIFY channel on which a put or delete
// of a team case is announced, with the schema as the payload. NOTIFY is
// sent when the transaction commits, so a listener that hears it reads the
// change.
const teamCasesChannel = "incidentbot_team_cases"

func notifyTeamCases(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, coalesce(current_schema(), ''))`, teamCasesChannel)
	return err
}

// WatchTeamCases calls changed each time a put or delete of a team case
// in the store's schema commits, from any replica, until ctx ends; it
// returns nil then. It listens on a connection of its own, outside the
// pool, and connects again after a pause when the connection is lost,
// calling changed once it listens again for what it may have missed.
// Notifications only make replicas hear sooner: TeamCasesVersion stays
// the record of what changed.
func (s *Store) WatchTeamCases(ctx context.Context, changed func()) error {
	for {
		err := s.listenTeamCases(ctx, changed)
		if ctx.Err() != nil {
			return nil
		}
		s.log.Warn("listening for team case changes failed; listening again shortly", "err", err)
		t := time.NewTimer(5 * time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

func (s *Store) listenTeamCases(ctx context.Context, changed func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var schema string
	if err := conn.QueryRow(ctx, `SELECT coalesce(current_schema(), '')`).Scan(&schema); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `LISTEN `+teamCasesChannel); err != nil {
		return err
	}
	changed()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Payload == schema {
			changed()
		}
	}
}

// errNothing rolls back a transaction that found nothing to do.
var errNothing = errors.New("nothing to do")

// TeamCasesVersion implements store.Store.
func (s *Store) TeamCasesVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.pool.QueryRow(ctx, `SELECT version FROM team_cases_version WHERE one = 1`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read team cases version: %w", err)
	}
	return v, nil
}

// Purge implements store.Store.
func (s *Store) Purge(ctx context.Context, before time.Time) (int64, error) {
	now := s.now()
	var total int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, q := range []struct {
			query string
			arg   time.Time
		}{
			{`DELETE FROM suggestions WHERE at < $1`, before},
			{`DELETE FROM feedback WHERE at < $1`, before},
			{`DELETE FROM replies WHERE updated < $1`, before},
			{`DELETE FROM shares WHERE created < $1`, before},
			{`DELETE FROM inbox WHERE received < $1`, before},
			{`DELETE FROM reply_claims WHERE expires_at <= $1`, now},
			{`DELETE FROM claims WHERE expires_at <= $1`, now},
		} {
			tag, err := tx.Exec(ctx, q.query, q.arg)
			if err != nil {
				return err
			}
			total += tag.RowsAffected()
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
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping postgres store: %w", err)
	}
	return nil
}

// Close implements store.Store. It waits for queries in flight.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// array returns v, or an empty list for nil: a nil slice would be NULL.
func array(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// bytea returns p, or an empty one for nil: a nil slice would be NULL.
func bytea(p []byte) []byte {
	if p == nil {
		return []byte{}
	}
	return p
}

func nilIfEmpty[T any](v []T) []T {
	if len(v) == 0 {
		return nil
	}
	return v
}

// scoredCase is how a store.ScoredCase is kept in jsonb.
type scoredCase struct {
	CaseID string  `json:"case_id"`
	Score  float64 `json:"score"`
}

func encodeCases(cs []store.ScoredCase) (string, error) {
	out := make([]scoredCase, len(cs))
	for i, c := range cs {
		out[i] = scoredCase{CaseID: c.CaseID, Score: c.Score}
	}
	data, err := json.Marshal(out)
	return string(data), err
}

func decodeCases(data []byte) ([]store.ScoredCase, error) {
	var cs []scoredCase
	if err := json.Unmarshal(data, &cs); err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, nil
	}
	out := make([]store.ScoredCase, len(cs))
	for i, c := range cs {
		out[i] = store.ScoredCase{CaseID: c.CaseID, Score: c.Score}
	}
	return out, nil
}
