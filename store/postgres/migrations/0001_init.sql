-- Lists of ids are text[]; scored cases are jsonb.

CREATE TABLE suggestions (
	key        text        NOT NULL PRIMARY KEY CHECK (key <> ''),
	at         timestamptz NOT NULL,
	channel    text        NOT NULL,
	private    boolean     NOT NULL,
	thread     text        NOT NULL,
	source     text        NOT NULL,
	lang       text        NOT NULL,
	symptoms   text[]      NOT NULL,
	components text[]      NOT NULL,
	cases      jsonb       NOT NULL -- [{"case_id": "...", "score": 1.5}, ...], best first
);
CREATE INDEX suggestions_at ON suggestions (at);

CREATE TABLE feedback (
	channel text        NOT NULL,
	message text        NOT NULL,
	case_id text        NOT NULL,
	user_id text        NOT NULL,
	at      timestamptz NOT NULL,
	private boolean     NOT NULL,
	vote    text        NOT NULL CHECK (vote IN ('helpful', 'not_relevant')),
	query   text        NOT NULL,
	PRIMARY KEY (channel, message, case_id, user_id)
);
CREATE INDEX feedback_at ON feedback (at);
CREATE INDEX feedback_case ON feedback (case_id, vote);

CREATE TABLE replies (
	channel  text        NOT NULL,
	thread   text        NOT NULL,
	reply_ts text        NOT NULL,
	lang     text        NOT NULL,
	case_ids text[]      NOT NULL,
	updated  timestamptz NOT NULL,
	PRIMARY KEY (channel, thread)
);
CREATE INDEX replies_updated ON replies (updated);

CREATE TABLE reply_claims (
	channel    text        NOT NULL,
	thread     text        NOT NULL,
	owner      text        NOT NULL,
	claimed_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL,
	PRIMARY KEY (channel, thread)
);
CREATE INDEX reply_claims_expires ON reply_claims (expires_at);

CREATE TABLE claims (
	key        text        NOT NULL PRIMARY KEY,
	owner      text        NOT NULL,
	claimed_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL
);
CREATE INDEX claims_expires ON claims (expires_at);

CREATE TABLE digests (
	target      text        NOT NULL,
	week        text        NOT NULL,
	claimed_by  text        NOT NULL,
	claimed_at  timestamptz NOT NULL,
	lease_until timestamptz NOT NULL,
	posted_at   timestamptz, -- NULL until posted
	message_ts  text        NOT NULL DEFAULT '',
	PRIMARY KEY (target, week)
);
