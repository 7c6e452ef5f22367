package bot_test

import (
	"strings"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// TestCaseKeptToAPrivateChannel: a case the library keeps to one private
// channel (a team case captured there) is suggested, found and shown in
// that channel, and by no reply, search or show in another.
func TestCaseKeptToAPrivateChannel(t *testing.T) {
	const kept = "tl-010" // the alertmanager fixture's best case
	set, err := cases.Load("../matcher/testdata/library", cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	lib, _ := cases.NewLibrary(set)
	m, err := matcher.New(lib, matcher.Options{Only: map[string]string{kept: privChannel}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	h := start(t, nil)
	h.bot.SetSearcher(m)

	reply := func(channel string) string {
		t.Helper()
		ev := h.event("alertmanager", channel)
		h.ack(h.fake.SendEvent(ev))
		return blocksText(h.reply(ev))
	}
	slash := func(channel, text string) string {
		t.Helper()
		return string(h.ack(h.fake.SendSlashCommand(map[string]string{"command": "/incidents", "text": text,
			"user_id": "U0ASKER", "channel_id": channel, "trigger_id": "T" + channel + text})))
	}
	if got := reply(privChannel); !strings.Contains(got, kept) {
		t.Fatalf("the alert in the case's own channel is not answered with it:\n%s", got)
	}
	if got := reply(incChannel); strings.Contains(got, kept) {
		t.Errorf("the alert in another channel is answered with the case kept to %s:\n%s", privChannel, got)
	}
	for _, text := range []string{
		"similar pods OOMKilled and in CrashLoopBackOff after the update",
		"search symptom:crash-loop",
		"search matchmaking OOMKilled CrashLoopBackOff",
		"show " + kept,
	} {
		if got := slash(privChannel, text); !strings.Contains(got, kept) {
			t.Errorf("/incidents %s in %s does not give the case:\n%.600s", text, privChannel, got)
		}
		got := slash(incChannel, text)
		if strings.HasPrefix(text, "show ") {
			got = strings.ReplaceAll(got, `There is no case \"`+kept, "") // the answer repeats what was asked
		}
		if strings.Contains(got, kept) || strings.Contains(got, "matchmaking server") {
			t.Errorf("/incidents %s in another channel reveals the case kept to %s:\n%.600s", text, privChannel, got)
		}
	}
}
