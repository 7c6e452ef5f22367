-- Times are unix microseconds in UTC; lists are JSON arrays.

CREATE TABLE suggestions (
	key        TEXT    NOT NULL PRIMARY KEY CHECK (key <> ''),
	at         INTEGER NOT NULL,
	channel    TEXT    NOT NULL,
	private    INTEGER NOT NULL,
	thread     TEXT    NOT NULL,
	source     TEXT    NOT NULL,
	lang       TEXT    NOT NULL,
	symptoms   TEXT    NOT NULL, -- ["tag", ...]
	components TEXT    NOT NULL, -- ["tag", ...]
	cases      TEXT    NOT NULL  -- [{"case_id": "...", "score": 1.5}, ...], best first
) STRICT;
CREATE INDEX suggestions_at ON suggestions (at);

CREATE TABLE feedback (
	channel TEXT    NOT NULL,
	message TEXT    NOT NULL,
	case_id TEXT    NOT NULL,
	user_id TEXT    NOT NULL,
	at      INTEGER NOT NULL,
	private INTEGER NOT NULL,
	vote    TEXT    NOT NULL CHECK (vote IN ('helpful', 'not_relevant')),
	query   TEXT    NOT NULL,
	PRIMARY KEY (channel, message, case_id, user_id)
) STRICT;
CREATE INDEX feedback_at ON feedback (at);
CREATE INDEX feedback_case ON feedback (case_id, vote);

CREATE TABLE replies (
	channel  TEXT    NOT NULL,
	thread   TEXT    NOT NULL,
	reply_ts TEXT    NOT NULL,
	lang     TEXT    NOT NULL,
	case_ids TEXT    NOT NULL, -- ["case id", ...]
	updated  INTEGER NOT NULL,
	PRIMARY KEY (channel, thread)
) STRICT;
CREATE INDEX replies_updated ON replies (updated);

CREATE TABLE reply_claims (
	channel    TEXT    NOT NULL,
	thread     TEXT    NOT NULL,
	owner      TEXT    NOT NULL,
	claimed_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	PRIMARY KEY (channel, thread)
) STRICT;
CREATE INDEX reply_claims_expires ON reply_claims (expires_at);

CREATE TABLE claims (
	key        TEXT    NOT NULL PRIMARY KEY,
	owner      TEXT    NOT NULL,
	claimed_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX claims_expires ON claims (expires_at);

CREATE TABLE digests (
	target      TEXT    NOT NULL,
	week        TEXT    NOT NULL,
	claimed_by  TEXT    NOT NULL,
	claimed_at  INTEGER NOT NULL,
	lease_until INTEGER NOT NULL,
	posted_at   INTEGER,          -- NULL until posted
	message_ts  TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (target, week)
) STRICT;
