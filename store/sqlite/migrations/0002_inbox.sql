-- The inbox: events recorded before they were acked, so that one a replica
-- acked but did not handle is found by another. Times are unix microseconds
-- in UTC.

CREATE TABLE inbox (
	key          TEXT    NOT NULL PRIMARY KEY CHECK (key <> ''),
	kind         TEXT    NOT NULL,
	payload      BLOB    NOT NULL, -- the raw envelope payload, as received
	owner        TEXT    NOT NULL,
	received     INTEGER NOT NULL,
	leased_until INTEGER NOT NULL,
	done         INTEGER NOT NULL DEFAULT 0 CHECK (done IN (0, 1))
) STRICT;
CREATE INDEX inbox_pending ON inbox (done, leased_until);
CREATE INDEX inbox_received ON inbox (received);
