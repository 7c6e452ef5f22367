-- Team cases: incident cases saved from Slack, kept as Incident Library
-- JSON. team_cases_version is one row whose version every put and delete
-- raises in the same transaction, so that replicas poll one cheap row to
-- know when to read the cases again. Times are unix microseconds in UTC.

CREATE TABLE team_cases (
	id         TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	body       BLOB    NOT NULL CHECK (length(body) > 0), -- the case as JSON
	channel    TEXT    NOT NULL,
	private    INTEGER NOT NULL CHECK (private IN (0, 1)),
	created_by TEXT    NOT NULL,
	updated_by TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	version    INTEGER NOT NULL
) STRICT;

CREATE TABLE team_cases_version (
	one     INTEGER NOT NULL PRIMARY KEY CHECK (one = 1),
	version INTEGER NOT NULL
) STRICT;
INSERT INTO team_cases_version (one, version) VALUES (1, 0);
