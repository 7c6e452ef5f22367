-- The inbox: events recorded before they were acked, so that one a replica
-- acked but did not handle is found by another.

CREATE TABLE inbox (
	key          text        NOT NULL PRIMARY KEY CHECK (key <> ''),
	kind         text        NOT NULL,
	payload      bytea       NOT NULL, -- the raw envelope payload, as received
	owner        text        NOT NULL,
	received     timestamptz NOT NULL,
	leased_until timestamptz NOT NULL,
	done         boolean     NOT NULL DEFAULT false
);
CREATE INDEX inbox_pending ON inbox (done, leased_until);
CREATE INDEX inbox_received ON inbox (received);
