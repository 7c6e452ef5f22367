package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/digest"
	"github.com/incidentbot/incidentbot/internal/slackfake"
)

// digests serves a quiet week's digest and one due time.
type digests struct{ lib *cases.Library }

func (d digests) Preview(_ context.Context, channel string, lang cases.Lang) (*digest.Digest, error) {
	w, _ := digest.ParseWeek("2026-W48", time.UTC)
	return digest.Compose(digest.Input{Target: channel, Lang: lang, Week: w, Library: d.lib}), nil
}

func (d digests) Next() []bot.DigestDue {
	return []bot.DigestDue{{Channel: "C0DIGEST", At: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}}
}

func TestDigestCommandAndHomeTab(t *testing.T) {
	h := start(t, func(o *bot.Options) { o.Digests = digests{lib: testMatcher(t).Library()} })
	payload := string(h.ack(h.fake.SendSlashCommand(map[string]string{"command": "/incidents", "text": "digest",
		"user_id": "U0ASKER", "channel_id": incChannel, "trigger_id": "Tdigest"})))
	if !strings.Contains(payload, "Weekly incident digest, 2026-W48") || !strings.Contains(payload, "quiet week") || !strings.Contains(payload, `"response_type":"ephemeral"`) {
		t.Errorf("/incidents digest answered:\n%.600s", payload)
	}
	h.ack(h.fake.SendEvent(map[string]any{"type": "app_home_opened", "user": "U0VIEWER", "channel": "D0HOME", "tab": "home"}))
	c, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "views.publish" })
	if err != nil {
		t.Fatal(err)
	}
	body := c.Form.Encode() + string(mustJSON(c.JSON))
	for _, want := range []string{"U0VIEWER", "This week so far", "Next digests", "C0DIGEST"} {
		if !strings.Contains(body, want) {
			t.Errorf("home tab lacks %q:\n%.800s", want, body)
		}
	}
}
