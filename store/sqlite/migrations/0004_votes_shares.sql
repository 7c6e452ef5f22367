-- Votes steer the ranking for similar texts: each vote carries the
-- workspace it was cast in, and the bot reads a workspace's newest votes.
-- Replies keep the text they answered, so that any replica can answer
-- "Show more" and take a vote's text. Shares are the shortcut answers
-- waiting for their "Share in thread" button, readable by any replica.
-- Times are unix microseconds in UTC.

ALTER TABLE feedback ADD COLUMN team TEXT NOT NULL DEFAULT '';
CREATE INDEX feedback_team_at ON feedback (team, at);

ALTER TABLE replies ADD COLUMN text TEXT NOT NULL DEFAULT '';

CREATE TABLE shares (
	id      TEXT    NOT NULL PRIMARY KEY CHECK (id <> ''),
	channel TEXT    NOT NULL,
	thread  TEXT    NOT NULL,
	private INTEGER NOT NULL,
	text    TEXT    NOT NULL,
	created INTEGER NOT NULL
) STRICT;
CREATE INDEX shares_created ON shares (created);
