-- Votes steer the ranking for similar texts: each vote carries the
-- workspace it was cast in, and the bot reads a workspace's newest votes.
-- Replies keep the text they answered, so that any replica can answer
-- "Show more" and take a vote's text. Shares are the shortcut answers
-- waiting for their "Share in thread" button, readable by any replica.

ALTER TABLE feedback ADD COLUMN team text NOT NULL DEFAULT '';
CREATE INDEX feedback_team_at ON feedback (team, at);

ALTER TABLE replies ADD COLUMN text text NOT NULL DEFAULT '';

CREATE TABLE shares (
	id      text        NOT NULL PRIMARY KEY CHECK (id <> ''),
	channel text        NOT NULL,
	thread  text        NOT NULL,
	private boolean     NOT NULL,
	text    text        NOT NULL,
	created timestamptz NOT NULL
);
CREATE INDEX shares_created ON shares (created);
