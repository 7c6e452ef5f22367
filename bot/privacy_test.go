package bot_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/internal/slackfake"
	"github.com/incidentbot/incidentbot/store"
)

// keepingInbox is an inbox that keeps the payloads it is given.
type keepingInbox struct {
	mu       sync.Mutex
	payloads map[string][]byte
}

func (in *keepingInbox) Put(_ context.Context, key, kind string, payload []byte) (bool, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, ok := in.payloads[key]; ok {
		return false, nil
	}
	in.payloads[key] = payload
	return true, nil
}

func (in *keepingInbox) Done(context.Context, string) error                      { return nil }
func (in *keepingInbox) Renew(context.Context) error                             { return nil }
func (in *keepingInbox) Orphans(context.Context, int) ([]store.InboxItem, error) { return nil, nil }

func (in *keepingInbox) get(key string) ([]byte, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	p, ok := in.payloads[key]
	return p, ok
}

func topKeys(t *testing.T, payload []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatalf("recorded payload is not a JSON object: %v", err)
	}
	return slices.Sorted(maps.Keys(m))
}

// TestInboxRecordsOnlyWhatIsNeeded: messages the bot will not answer (a
// channel it knows is not an incident channel, a direct message) are not
// recorded; what is recorded is what handling the event again needs, not
// Slack's whole envelope (tokens, team, authorizations).
func TestInboxRecordsOnlyWhatIsNeeded(t *testing.T) {
	in := &keepingInbox{payloads: map[string][]byte{}}
	h := start(t, func(o *bot.Options) { o.Inbox, o.Workers = in, 1 })

	// The first message in #general is recorded: the bot has not looked
	// the channel up yet. Once it has, the next is not.
	h.ack(h.fake.SendEventWithID("EvGEN1", h.event("chatter", otherChannel)))
	h.barrier()
	h.ack(h.fake.SendEventWithID("EvGEN2", h.event("chatter", otherChannel)))
	dm := h.event("chatter", "D0DIRECT")
	dm["channel_type"] = "im"
	h.ack(h.fake.SendEventWithID("EvDM", dm))
	for _, k := range []string{"EvGEN2", "EvDM"} {
		if _, ok := in.get(k); ok {
			t.Errorf("event %s from a channel the bot does not answer in was recorded", k)
		}
	}

	alert := h.event("alertmanager", incChannel)
	h.ack(h.fake.SendEventWithID("EvINC", alert))
	reply := h.reply(alert)
	p, ok := in.get("EvINC")
	if !ok {
		t.Fatal("an alert in an incident channel was not recorded before its ack")
	}
	if got := topKeys(t, p); !slices.Equal(got, []string{"event", "event_id"}) {
		t.Errorf("recorded envelope keeps %q, want only event and event_id", got)
	}

	h.ack(h.fake.SendInteractive(blockAction("U0VOTER", incChannel, reply, "feedback_helpful", "tl-010", "case:tl-010:actions")))
	if _, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "chat.update" }); err != nil {
		t.Fatal(err)
	}
	var press []byte
	in.mu.Lock()
	defer in.mu.Unlock()
	for k, v := range in.payloads {
		if len(k) > 3 && k[:3] == "ia:" {
			press = v
		}
	}
	if press == nil {
		t.Fatal("the button press was not recorded")
	}
	for _, k := range topKeys(t, press) {
		if k == "token" || k == "team" || k == "api_app_id" || k == "enterprise" {
			t.Errorf("recorded button press keeps %q", k)
		}
	}
}
