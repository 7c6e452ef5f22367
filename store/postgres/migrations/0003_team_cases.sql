-- Team cases: incident cases saved from Slack, kept as Incident Library
-- JSON (bytea, so that the bytes come back as they were put).
-- team_cases_version is one row whose version every put and delete raises
-- in the same transaction: its row lock orders the writers, so versions
-- commit in order, and replicas poll one cheap row to know when to read
-- the cases again.

CREATE TABLE team_cases (
	id         text        NOT NULL PRIMARY KEY CHECK (id <> ''),
	body       bytea       NOT NULL CHECK (length(body) > 0), -- the case as JSON
	channel    text        NOT NULL,
	private    boolean     NOT NULL,
	created_by text        NOT NULL,
	updated_by text        NOT NULL,
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL,
	version    bigint      NOT NULL
);

CREATE TABLE team_cases_version (
	one     integer NOT NULL PRIMARY KEY CHECK (one = 1),
	version bigint  NOT NULL
);
INSERT INTO team_cases_version (one, version) VALUES (1, 0);
