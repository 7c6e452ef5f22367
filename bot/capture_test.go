package bot_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/internal/slackfake"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/store"
	"github.com/incidentbot/incidentbot/store/sqlite"
)

// Users of the capture tests.
const (
	capturer = "U0CAPTURER"
	stranger = "U0STRANGER"
	admin    = "U0ADMIN"
	adminGrp = "S0ADMINS"
)

// incidentHistory seeds a channel with a 40-message incident: alerts from
// Alertmanager, people talking, a thread, a fix marked with a check mark,
// a pinned message, a "resolved" message, follow-ups, channel notices and
// the bot's own reply. It returns the ts of the message marked as the fix.
func incidentHistory(fake *slackfake.Server, channel string, start int64) (fixTS string) {
	at := func(min int) string { return fmt.Sprintf("%d.000100", start+int64(min)*60) }
	alert := func(min int, title, text string) {
		fake.AddMessage(channel, map[string]any{"ts": at(min), "subtype": "bot_message", "bot_id": "B0ALERTMGR", "username": "Alertmanager", "text": "",
			"attachments": []any{map[string]any{"title": title, "text": text, "footer": "Prometheus Alertmanager", "color": "danger"}}})
	}
	say := func(min int, user, text string, extra ...map[string]any) string {
		m := map[string]any{"ts": at(min), "user": user, "text": text}
		for _, e := range extra {
			for k, v := range e {
				m[k] = v
			}
		}
		return fake.AddMessage(channel, m)
	}
	fake.AddMessage(channel, map[string]any{"ts": at(0) + "1", "subtype": "channel_join", "user": "U0ANNA", "text": "<@U0ANNA> has joined the channel"})
	alert(1, "[FIRING:1] CartRedisTimeouts (prod cart-service)", "cart-service redis command timeouts above 20/s; checkout requests failing with 500")
	say(2, "U0ANNA", "looking, cart-service is throwing redis timeouts")
	say(3, "U0BEN", "checkout error rate at 12%, customers can't pay")
	root := say(4, "U0ANNA", "declaring SEV2, I'm incident commander. <@U0BEN> comms please")
	say(5, "U0BEN", "on it", map[string]any{"thread_ts": root})
	say(5, "U0CARL", "I'll watch the redis dashboards", map[string]any{"thread_ts": root})
	alert(6, "[FIRING:2] CartRedisTimeouts (prod cart-service)", "cart-service redis command timeouts above 20/s")
	say(6, "U0CARL", "redis cluster itself looks healthy, CPU 30%, no failover")
	say(7, "U0ANNA", "what changed in the last hour?")
	say(8, "U0DANA", "we deployed cart-service v3.14 at 09:50 with the redis client upgrade")
	say(9, "U0ANNA", "connection pool per pod went from 50 to 8 in the new client defaults?")
	say(10, "U0CARL", "yep, pool exhausted, commands queue and time out")
	alert(11, "[FIRING:1] CheckoutHigh5xx (prod checkout-api)", "checkout-api 5xx ratio above 5% for 5m")
	say(12, "U0BEN", "status page updated: degraded checkout")
	say(13, "U0ANNA", "let's roll back cart-service to v3.13 rather than patch the pool size live")
	say(14, "U0DANA", "rollback started")
	say(15, "U0ERIN", "anyone want coffee?")
	say(16, "U0DANA", "pods cycling, 40% on v3.13")
	fixTS = say(17, "U0DANA", "rolled back cart-service to v3.13, redis pool back at 50 per pod",
		map[string]any{"reactions": []any{map[string]any{"name": "white_check_mark", "count": 2, "users": []any{"U0ANNA", "U0BEN"}}}})
	say(18, "U0CARL", "redis timeouts dropping fast, mitigated")
	alert(19, "[RESOLVED] CartRedisTimeouts (prod cart-service)", "cart-service redis command timeouts back to normal")
	say(20, "U0BEN", "checkout error rate 0.3% and falling")
	pin := say(21, "U0ANNA", "root cause: the redis client upgrade in v3.14 shrank the connection pool default from 50 to 8")
	fake.Pin(channel, pin)
	say(22, "U0ERIN", "nice work all")
	fake.AddMessage(channel, map[string]any{"ts": at(23), "user": "U0FAKEBOT", "bot_id": "B0FAKEBOT", "text": "Similar past incidents: something the bot said"})
	alert(24, "[RESOLVED] CheckoutHigh5xx (prod checkout-api)", "checkout-api 5xx ratio normal")
	say(25, "U0BEN", "status page back to operational")
	say(26, "U0ANNA", "TODO: pin the redis pool size in cart-service config instead of relying on client defaults")
	say(27, "U0CARL", "follow-up: alert on redis client pool saturation, not only on timeouts")
	say(28, "U0DANA", "TODO: read client library changelogs for default changes before upgrading")
	say(29, "U0ANNA", "I'll write the postmortem tomorrow")
	say(30, "U0ERIN", ":tada:")
	say(31, "U0BEN", "customer support says complaints stopped")
	say(32, "U0CARL", "graphs attached in the doc")
	say(33, "U0DANA", "v3.14 blocked in the deploy pipeline until the pool fix lands")
	say(34, "U0ANNA", "thanks everyone")
	say(35, "U0BEN", "closing the bridge")
	say(36, "U0ANNA", "incident resolved at 10:36, total impact about 35 minutes")
	say(37, "U0ERIN", "see you at the review")
	say(38, "U0CARL", "dashboard link is in the channel bookmarks")
	say(39, "U0DANA", "bye")
	return fixTS
}

// teamLibrary refreshes the bot's matcher from the test library and the
// store's team cases, as incidentbot run does after a save.
type teamLibrary struct {
	t     *testing.T
	st    store.Store
	mu    sync.Mutex
	bot   *bot.Bot
	count int
}

func (l *teamLibrary) refresh(ctx context.Context) error {
	tcs, err := l.st.TeamCases(ctx)
	if err != nil {
		return err
	}
	base, err := cases.Load("../matcher/testdata/library", cases.DefaultTaxonomy())
	if err != nil {
		return err
	}
	team := &cases.Set{Name: "team"}
	for _, tc := range tcs {
		var c cases.Case
		if err := json.Unmarshal(tc.Case, &c); err != nil {
			return err
		}
		team.Cases = append(team.Cases, &c)
	}
	lib, _ := cases.NewLibrary(base, team)
	m, err := matcher.New(lib, matcher.Options{})
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bot.SetSearcher(m)
	l.count++
	return nil
}

// flaky fails the next puts it is told to, then stores as st does.
type flaky struct {
	store.Store
	mu   sync.Mutex
	fail int
}

func (f *flaky) PutTeamCase(ctx context.Context, c store.TeamCase) (store.TeamCase, error) {
	f.mu.Lock()
	failing := f.fail > 0
	if failing {
		f.fail--
	}
	f.mu.Unlock()
	if failing {
		return store.TeamCase{}, errors.New("database is locked")
	}
	return f.Store.PutTeamCase(ctx, c)
}

type captureHarness struct {
	*harness
	st  *flaky
	lib *teamLibrary
}

func startCapture(t *testing.T, fakeOpts ...slackfake.Option) *captureHarness {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "activity.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return startCaptureOn(t, st, fakeOpts...)
}

// startCaptureOn is startCapture over the given store.
func startCaptureOn(t *testing.T, st store.Store, fakeOpts ...slackfake.Option) *captureHarness {
	t.Helper()
	fl := &flaky{Store: st}
	lib := &teamLibrary{t: t, st: st}
	fake := slackfake.New(fakeOpts...)
	t.Cleanup(fake.Close)
	fake.AddUserGroup(adminGrp, admin)
	h := startWith(t, fake, func(o *bot.Options) {
		o.Workers = 1
		o.TeamCases = fl
		o.RefreshLibrary = lib.refresh
		o.AdminGroup = adminGrp
	})
	lib.bot = h.bot
	return &captureHarness{harness: h, st: fl, lib: lib}
}

// shortcut presses "Save as incident case" on a message and returns the
// envelope id.
func (h *captureHarness) shortcut(user, channel, name, ts string) string {
	return h.fake.SendInteractive(map[string]any{
		"type": "message_action", "callback_id": bot.CaptureID, "user": map[string]any{"id": user},
		"channel": map[string]any{"id": channel, "name": name}, "message_ts": ts,
		"message": map[string]any{"type": "message", "ts": ts, "text": "some message", "user": "U0ANNA"},
	})
}

// draftView waits for the capture modal with its draft and returns it.
func (h *captureHarness) draftView(after int) map[string]any {
	h.t.Helper()
	v, err := h.fake.WaitView(h.waitCtx(), func(i int, v map[string]any) bool { return i == after && v["submit"] != nil })
	if err != nil {
		h.t.Fatalf("no draft in the capture modal: %v", err)
	}
	return v
}

// input returns the element of the view's input block with id.
func input(v map[string]any, block string) map[string]any {
	for _, b := range v["blocks"].([]any) {
		bm := b.(map[string]any)
		if bm["block_id"] == block {
			el, _ := bm["element"].(map[string]any)
			return el
		}
	}
	return nil
}

func initialText(v map[string]any, block string) string {
	s, _ := input(v, block)["initial_value"].(string)
	return s
}

func initialOptions(v map[string]any, block string) []string {
	el := input(v, block)
	var out []string
	if o, ok := el["initial_option"].(map[string]any); ok {
		out = append(out, o["value"].(string))
	}
	os, _ := el["initial_options"].([]any)
	for _, o := range os {
		out = append(out, o.(map[string]any)["value"].(string))
	}
	return out
}

func viewText(v map[string]any) string {
	b, _ := json.Marshal(v["blocks"])
	return string(b)
}

// submit submits the view and returns the ack's payload.
func (h *captureHarness) submit(user, viewID string, edit func(slackfake.ViewValues)) map[string]any {
	h.t.Helper()
	raw := h.ack(h.fake.SubmitView(user, viewID, edit))
	var p map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &p); err != nil {
			h.t.Fatal(err)
		}
	}
	return p
}

func (h *captureHarness) teamCase(id string) (store.TeamCase, cases.Case) {
	h.t.Helper()
	tc, ok, err := h.st.TeamCase(context.Background(), id)
	if err != nil || !ok {
		h.t.Fatalf("team case %s: %v, %v", id, ok, err)
	}
	var c cases.Case
	if err := json.Unmarshal(tc.Case, &c); err != nil {
		h.t.Fatal(err)
	}
	return tc, c
}

// alertIn sends an alert like the captured incident's in a channel.
func (h *captureHarness) alertIn(channel string) map[string]any {
	ev := h.event("alertmanager", channel)
	ev["attachments"] = []any{map[string]any{"title": "[FIRING:1] CartRedisTimeouts (prod cart-service)",
		"text": "cart-service redis command timeouts, checkout failing; redis client connection pool exhausted after deploy", "footer": "Prometheus Alertmanager"}}
	return ev
}

func TestCaptureFromChannelHistory(t *testing.T) {
	h := startCapture(t)
	h.fake.SetChannelTopic(incChannel, "Checkout failing: cart-service redis timeouts", "Incident room")
	fix := incidentHistory(h.fake, incChannel, 1764583200) // 2025-12-01 10:00 UTC

	h.ack(h.shortcut(capturer, incChannel, "inc-checkout", fix))
	open, err := h.fake.WaitCalls(h.waitCtx(), "views.open", 1)
	if err != nil || open[0].Error != "" {
		t.Fatalf("views.open: %+v, %v", open, err)
	}
	v := h.draftView(0)

	if got := initialText(v, "title"); got != "Checkout failing: cart-service redis timeouts" {
		t.Errorf("title %q", got)
	}
	summary := initialText(v, "summary")
	for _, want := range []string{"CartRedisTimeouts", "10:01", "declared at 10:04", "mitigated at 10:18", "resolved at 10:36", "35m"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary %q lacks %q", summary, want)
		}
	}
	helped := initialText(v, "helped")
	if !strings.Contains(helped, "rolled back cart-service to v3.13") {
		t.Errorf("what helped %q lacks the fix marked with a check mark", helped)
	}
	if !strings.Contains(helped, "let's roll back") && !strings.Contains(helped, "root cause: the redis client upgrade") {
		t.Errorf("what helped %q lacks the pinned message", helped)
	}
	actions := strings.Split(initialText(v, "action_items"), "\n")
	if len(actions) != 3 || !strings.HasPrefix(actions[0], "pin the redis pool size") || !strings.HasPrefix(actions[1], "alert on redis client pool saturation") {
		t.Errorf("action items %q", actions)
	}
	if cause := initialText(v, "root_cause_text"); !strings.Contains(cause, "shrank the connection pool") {
		t.Errorf("root cause %q", cause)
	}
	body := viewText(v)
	if strings.Contains(body, "something the bot said") || strings.Contains(body, "has joined") {
		t.Error("the draft quotes the bot's own message or a channel notice")
	}
	if !strings.Contains(body, "https://fake.slack.com/archives/"+incChannel+"/p") {
		t.Error("the modal links no quoted message")
	}
	if strings.Contains(body, "private channel") {
		t.Error("a public channel's modal speaks of a private one")
	}
	symptoms := initialOptions(v, "symptoms")
	components := initialOptions(v, "components")
	if len(symptoms) == 0 || !slices.Contains(components, "cache") && !slices.Contains(components, "redis") {
		t.Errorf("tags: symptoms %v, components %v", symptoms, components)
	}
	// Every kind of tag can be picked, within a select's 100 options.
	for _, b := range []string{"symptoms", "components", "root_cause", "contributing"} {
		el := input(v, b)
		if opts, _ := el["options"].([]any); len(opts) == 0 && el["option_groups"] == nil {
			t.Errorf("%s offers no tags", b)
		}
	}

	// A submission without a title is sent back with the error beside it.
	p := h.submit(capturer, v["id"].(string), func(vals slackfake.ViewValues) { vals.SetText("title", "  ") })
	if p["response_action"] != "errors" || p["errors"].(map[string]any)["title"] == nil {
		t.Fatalf("empty title: %v", p)
	}
	// A store that fails keeps the modal open, saying so; nothing is saved.
	h.st.mu.Lock()
	h.st.fail = 1
	h.st.mu.Unlock()
	edit := func(vals slackfake.ViewValues) {
		vals.SetText("title", "Cart checkout failed: redis client pool shrank in v3.14")
		vals.SetText("action_items", initialText(v, "action_items")+"\nadd a canary for cart-service")
		vals.Select("root_cause", "config-change")
	}
	p = h.submit(capturer, v["id"].(string), edit)
	if p["response_action"] != "errors" || !strings.Contains(fmt.Sprint(p["errors"]), "could not be saved") {
		t.Fatalf("failing store: %v", p)
	}
	if n := len(h.fake.Calls("chat.postMessage")); n != 0 {
		t.Fatalf("%d messages posted after a failed save", n)
	}
	// Saved on the next press, confirmed in the incident's thread.
	if p = h.submit(capturer, v["id"].(string), edit); p != nil {
		t.Fatalf("save answered %v", p)
	}
	confirm, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool {
		return c.Method == "chat.postMessage" && c.Channel == incChannel && strings.Contains(c.Text, "saved this incident")
	})
	if err != nil {
		t.Fatal(err)
	}
	if confirm.ThreadTS != fix {
		t.Errorf("confirmed in thread %q, want the shortcut's message %q", confirm.ThreadTS, fix)
	}
	id := "team-inc-checkout-2025-12-01"
	if !strings.Contains(confirm.Text, id) {
		t.Fatalf("confirmation %q does not name %s", confirm.Text, id)
	}
	tc, c := h.teamCase(id)
	if tc.CreatedBy != capturer || tc.Channel != incChannel || tc.Private {
		t.Errorf("team case %+v", tc)
	}
	if c.Title.En != "Cart checkout failed: redis client pool shrank in v3.14" || c.RootCause != "config-change" || len(c.ActionItems) != 4 ||
		c.Timeline.ResolvedAfter == nil || c.Timeline.ResolvedAfter.String() != "35m" || c.Date != "2025-12-01" {
		t.Errorf("saved case %+v", c)
	}
	linked := 0
	for _, s := range append(c.Remediation, c.ActionItems...) {
		if strings.HasPrefix(s.Source, "https://fake.slack.com/archives/") {
			linked++
		}
	}
	if linked < 3 || c.ActionItems[3].Source != "" {
		t.Errorf("%d steps link their messages; the added one links %q", linked, c.ActionItems[3].Source)
	}
	for _, p := range cases.Validate(&c, cases.DefaultTaxonomy()) {
		if p.Severity == cases.Error {
			t.Errorf("saved case is invalid: %s", p)
		}
	}

	// The next similar alert, in another channel, is answered with it.
	ev := h.alertIn(incChannel2)
	h.ack(h.fake.SendEvent(ev))
	if got := blocksText(h.reply(ev)); !strings.Contains(got, id) {
		t.Errorf("the next similar alert was not answered with the captured case: %s", got)
	}
}

func TestCaptureOpensWithinTriggerWindow(t *testing.T) {
	// Reading the history takes longer than the trigger lasts: the modal
	// must be open before the draft is built.
	h := startCapture(t, slackfake.WithTriggerTTL(300*time.Millisecond))
	incidentHistory(h.fake, incChannel, 1764583200)
	h.fake.FailNext("conversations.history", 1, slackfake.Fault{Delay: 600 * time.Millisecond})
	id := h.fake.SendSlashCommand(map[string]string{"command": "/incidents", "text": "capture", "channel_id": incChannel,
		"channel_name": "inc-checkout", "user_id": capturer})
	if p := h.ack(id); len(p) > 0 && string(p) != "null" {
		t.Errorf("the command answered %s besides the modal", p)
	}
	open, err := h.fake.WaitCalls(h.waitCtx(), "views.open", 1)
	if err != nil || open[0].Error != "" {
		t.Fatalf("views.open: %+v, %v", open, err)
	}
	v := h.draftView(0)
	if !strings.Contains(initialText(v, "title"), "CartRedisTimeouts") {
		t.Errorf("title from the first alert: %q", initialText(v, "title"))
	}
	// The view changes before the fake records the call that changed it.
	if up, err := h.fake.WaitCalls(h.waitCtx(), "views.update", 1); err != nil || len(up) != 1 || up[0].Error != "" {
		t.Errorf("views.update: %v, %v", up, err)
	}
}

func TestPrivateChannelCaptureStaysThere(t *testing.T) {
	h := startCapture(t)
	h.fake.SetChannelTopic(privChannel, "Cart checkout failing: redis pool exhausted", "")
	incidentHistory(h.fake, privChannel, 1764583200)
	h.ack(h.fake.SendSlashCommand(map[string]string{"command": "/incidents", "text": "capture", "channel_id": privChannel,
		"channel_name": "privategroup", "user_id": capturer}))
	v := h.draftView(0)
	if !strings.Contains(viewText(v), "suggested only in this channel") || input(v, "share") == nil {
		t.Fatalf("the private channel's modal does not say where its case is suggested: %s", viewText(v))
	}
	if p := h.submit(capturer, v["id"].(string), nil); p != nil {
		t.Fatalf("save answered %v", p)
	}
	id := "team-inc-secret-2025-12-01"
	if _, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool {
		return c.Method == "chat.postMessage" && c.Channel == privChannel && strings.Contains(c.Text, id)
	}); err != nil {
		t.Fatal(err)
	}
	if tc, _ := h.teamCase(id); !tc.Private {
		t.Fatalf("saved as shared: %+v", tc)
	}

	// Elsewhere the same alert never brings it up, nor does show.
	ev := h.alertIn(incChannel2)
	h.ack(h.fake.SendEvent(ev))
	h.barrier()
	for _, c := range h.fake.Calls("chat.postMessage") {
		if c.Channel != privChannel && strings.Contains(blocksText(c)+c.Text, id) {
			t.Fatalf("the private channel's case was suggested in %s", c.Channel)
		}
	}
	p := h.ack(h.fake.SendSlashCommand(map[string]string{"command": "/incidents", "text": "show " + id, "channel_id": incChannel2, "user_id": capturer}))
	if strings.Contains(string(p), "Edit") || !strings.Contains(string(p), "There is no case") {
		t.Errorf("show in another channel: %s", p)
	}
	// Nor does an Edit pressed elsewhere open it.
	before := len(h.fake.ViewIDs())
	h.press(stranger, incChannel2, "team_case_edit", id)
	other, err := h.fake.WaitView(h.waitCtx(), func(i int, _ map[string]any) bool { return i == before })
	if err != nil {
		t.Fatal(err)
	}
	if body := viewText(other); strings.Contains(body, "redis") || !strings.Contains(body, "There is no team case") {
		t.Errorf("Edit in another channel opened: %s", body)
	}
	// In its own channel it is.
	mine := h.alertIn(privChannel)
	h.ack(h.fake.SendEvent(mine))
	if got := blocksText(h.reply(mine)); !strings.Contains(got, id) {
		t.Errorf("not suggested in its own channel: %s", got)
	}
}

// saveCase captures the incident in channel and returns the case id.
func (h *captureHarness) saveCase(channel, name string) string {
	h.t.Helper()
	before := len(h.fake.ViewIDs())
	h.ack(h.shortcut(capturer, channel, name, "1764583200.000100"))
	v := h.draftView(before)
	if p := h.submit(capturer, v["id"].(string), nil); p != nil {
		h.t.Fatalf("save answered %v", p)
	}
	c, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool {
		return c.Method == "chat.postMessage" && c.Channel == channel && strings.Contains(c.Text, "saved this incident")
	})
	if err != nil {
		h.t.Fatal(err)
	}
	id := strings.Split(c.Text, "`")[1]
	return id
}

// press presses a team case's button as user, in channel, and returns the
// answer posted to the response URL or ephemerally.
func (h *captureHarness) press(user, channel, action, id string) slackfake.Call {
	h.t.Helper()
	respURL := h.fake.ResponseURL()
	h.ack(h.fake.SendInteractive(map[string]any{
		"type": "block_actions", "user": map[string]any{"id": user}, "channel": map[string]any{"id": channel},
		"container":    map[string]any{"type": "message", "message_ts": "1764590000.000100", "channel_id": channel, "is_ephemeral": true},
		"response_url": respURL,
		"actions":      []any{map[string]any{"action_id": action, "block_id": "team_case:actions", "value": id, "type": "button"}},
	}))
	if action == "team_case_edit" {
		return slackfake.Call{}
	}
	c, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool { return c.Method == "response_url" && strings.HasSuffix(respURL, c.URL) })
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

func TestTeamCaseShowEditDelete(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) { testTeamCaseShowEditDelete(t, startCaptureOn(t, be.open(t)())) })
	}
}

func testTeamCaseShowEditDelete(t *testing.T, h *captureHarness) {
	incidentHistory(h.fake, incChannel, 1764583200)
	id := h.saveCase(incChannel, "inc-checkout")

	// Show offers Edit and Delete.
	p := h.ack(h.fake.SendSlashCommand(map[string]string{"command": "/incidents", "text": "show " + id, "channel_id": incChannel2, "user_id": stranger}))
	if !strings.Contains(string(p), "team_case_edit") || !strings.Contains(string(p), "team_case_delete") || !strings.Contains(string(p), `"confirm"`) {
		t.Fatalf("show of a team case: %s", p)
	}

	// Edit reopens the modal with the case; the edit is saved.
	before := len(h.fake.ViewIDs())
	h.press(stranger, incChannel2, "team_case_edit", id)
	v := h.draftView(before)
	if initialText(v, "title") != "Checkout failing: cart-service redis timeouts" && !strings.Contains(initialText(v, "title"), "CartRedisTimeouts") {
		t.Fatalf("edit modal title %q", initialText(v, "title"))
	}
	if p := h.submit(stranger, v["id"].(string), func(vals slackfake.ViewValues) { vals.SetText("title", "Redis pool shrank in cart-service v3.14") }); p != nil {
		t.Fatalf("edit answered %v", p)
	}
	if _, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool {
		return c.Method == "chat.postMessage" && strings.Contains(c.Text, "updated case")
	}); err != nil {
		t.Fatal(err)
	}
	tc, c := h.teamCase(id)
	if c.Title.En != "Redis pool shrank in cart-service v3.14" || tc.CreatedBy != capturer || tc.UpdatedBy != stranger || c.ID != id {
		t.Errorf("after edit: %+v, title %q", tc, c.Title.En)
	}

	// A stranger may not delete it; an admin group member may.
	if got := h.press(stranger, incChannel2, "team_case_delete", id); !strings.Contains(got.Text, "Only <@"+capturer+">") || got.ReplaceOriginal {
		t.Errorf("stranger's delete answered %q", got.Text)
	}
	if _, ok, _ := h.st.TeamCase(context.Background(), id); !ok {
		t.Fatal("a stranger deleted the case")
	}
	if got := h.press(admin, incChannel2, "team_case_delete", id); !strings.Contains(got.Text, "deleted") {
		t.Errorf("admin's delete answered %q", got.Text)
	}
	if _, ok, _ := h.st.TeamCase(context.Background(), id); ok {
		t.Fatal("the admin could not delete the case")
	}

	// The person who captured a case may delete it.
	incidentHistory(h.fake, incChannel2, 1764683200)
	id2 := h.saveCase(incChannel2, "incident-db")
	if got := h.press(capturer, incChannel2, "team_case_delete", id2); !strings.Contains(got.Text, "deleted") {
		t.Errorf("capturer's delete answered %q", got.Text)
	}
	if _, ok, _ := h.st.TeamCase(context.Background(), id2); ok {
		t.Fatal("the capturer could not delete the case")
	}
}

func TestCaptureOddHistories(t *testing.T) {
	huge := strings.Repeat("TODO: 원인 rolled back ✅ resolved 🔥 \u202e ", 1500)
	for _, tc := range []struct {
		name string
		seed func(f *slackfake.Server, ch string)
	}{
		{"empty", func(*slackfake.Server, string) {}},
		{"only bots", func(f *slackfake.Server, ch string) {
			for i := range 5 {
				f.AddMessage(ch, map[string]any{"subtype": "bot_message", "bot_id": "B0ALERT", "text": fmt.Sprintf("[FIRING:%d] DiskFull", i)})
			}
			f.AddMessage(ch, map[string]any{"user": "U0FAKEBOT", "bot_id": "B0FAKEBOT", "text": "Similar past incidents"})
		}},
		{"huge messages", func(f *slackfake.Server, ch string) {
			for range 30 {
				ts := f.AddMessage(ch, map[string]any{"user": "U1", "text": huge,
					"reactions": []any{map[string]any{"name": "white_check_mark", "count": 1, "users": []any{"U2"}}}})
				f.Pin(ch, ts)
			}
		}},
		{"odd unicode", func(f *slackfake.Server, ch string) {
			f.SetChannelTopic(ch, "\u200b\u202e\ufeff", "")
			f.AddMessage(ch, map[string]any{"user": "U1", "text": "\x00 z̷̢̛a̸l̴g̵o̶ \u2028 resolved"})
			f.AddMessage(ch, map[string]any{"user": "U1", "text": "TODO: \u0000"})
			f.AddMessage(ch, map[string]any{"user": "U1", "text": "<https://x.example/|> <@U2> <!channel>"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startCapture(t)
			tc.seed(h.fake, incChannel)
			h.ack(h.fake.SendSlashCommand(map[string]string{"command": "/incidents", "text": "capture", "channel_id": incChannel, "user_id": capturer}))
			up, err := h.fake.WaitCalls(h.waitCtx(), "views.update", 1)
			if err != nil {
				t.Fatal(err)
			}
			if up[0].Error != "" {
				t.Fatalf("the draft broke Slack's limits: %s %v", up[0].Error, up[0].JSON)
			}
			v := h.draftView(0)
			if initialText(v, "title") == "" {
				t.Error("no title to start from")
			}
			// Whatever the draft, a titled submission is saved or sent back
			// with a reason, never lost.
			p := h.submit(capturer, v["id"].(string), func(vals slackfake.ViewValues) {
				vals.SetText("title", "odd one")
				vals.SetText("summary", "it happened")
			})
			if p != nil {
				t.Fatalf("save answered %v", p)
			}
			if _, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool {
				return c.Method == "chat.postMessage" && strings.Contains(c.Text, "saved this incident")
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestKoreanChannelGetsKoreanDraft(t *testing.T) {
	h := startCapture(t)
	at := func(min int) string { return fmt.Sprintf("%d.000100", 1764583200+min*60) }
	h.fake.AddMessage(incChannel, map[string]any{"ts": at(0), "subtype": "bot_message", "bot_id": "B0ALERT", "text": "[FIRING:1] 결제 승인 API 지연 p99 3초 초과"})
	h.fake.AddMessage(incChannel, map[string]any{"ts": at(2), "user": "U1", "text": "확인 중입니다. 장애 선언합니다"})
	h.fake.AddMessage(incChannel, map[string]any{"ts": at(9), "user": "U2", "text": "원인은 DB 커넥션 풀 고갈입니다"})
	h.fake.AddMessage(incChannel, map[string]any{"ts": at(12), "user": "U2", "text": "커넥션 풀을 늘리고 재시작했습니다",
		"reactions": []any{map[string]any{"name": "white_check_mark", "count": 1, "users": []any{"U1"}}}})
	h.fake.AddMessage(incChannel, map[string]any{"ts": at(20), "user": "U1", "text": "결제 정상화, 복구 완료"})
	h.fake.AddMessage(incChannel, map[string]any{"ts": at(22), "user": "U1", "text": "후속 조치: 커넥션 풀 사용률 알림 추가"})
	h.ack(h.shortcut(capturer, incChannel, "inc-checkout", at(20)))
	v := h.draftView(0)
	if title, _ := v["title"].(map[string]any); title["text"] != "장애 사례 저장" {
		t.Errorf("modal title %v", title["text"])
	}
	if got := initialText(v, "title"); got != "결제 승인 API 지연 p99 3초 초과" {
		t.Errorf("title %q", got)
	}
	if s := initialText(v, "summary"); !strings.Contains(s, "장애 선언") || !strings.Contains(s, "복구") {
		t.Errorf("summary %q", s)
	}
	if got := initialText(v, "helped"); got != "커넥션 풀을 늘리고 재시작했습니다" {
		t.Errorf("what helped %q", got)
	}
	if got := initialText(v, "action_items"); got != "커넥션 풀 사용률 알림 추가" {
		t.Errorf("action items %q", got)
	}
	if p := h.submit(capturer, v["id"].(string), nil); p != nil {
		t.Fatalf("save answered %v", p)
	}
	c, err := h.fake.WaitCall(h.waitCtx(), func(c slackfake.Call) bool {
		return c.Method == "chat.postMessage" && strings.Contains(c.Text, "사례로 저장했습니다")
	})
	if err != nil {
		t.Fatal(err)
	}
	_, saved := h.teamCase(strings.Split(c.Text, "`")[1])
	if saved.Title.Ko != "결제 승인 API 지연 p99 3초 초과" || saved.Title.En != "" || saved.Remediation[0].Text.Ko == "" {
		t.Errorf("saved in the wrong language: %+v", saved.Title)
	}
}

func TestCaptureTagsBeyondHundredOptions(t *testing.T) {
	// A team's overlay can take a kind past a select's 100 options: the
	// modal then offers the tags in groups, and keeps the draft's picks.
	var comps []string
	for i := range 130 {
		comps = append(comps, fmt.Sprintf(`{"id": "svc-%03d", "label": {"en": "Service %03d", "ko": "서비스 %03d"}, "phrases": {"en": ["svc%03d"]}}`, i, i, i, i))
	}
	tax, probs := cases.LoadOverlay("overlay.json", []byte(`{"components": [`+strings.Join(comps, ",")+`]}`), cases.DefaultTaxonomy())
	if tax == nil {
		t.Fatal(probs)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "activity.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := start(t, func(o *bot.Options) { o.TeamCases, o.Taxonomy = st, tax })
	incidentHistory(h.fake, incChannel, 1764583200)
	h.ack(h.fake.SendSlashCommand(map[string]string{"command": "/incidents", "text": "capture", "channel_id": incChannel, "user_id": capturer}))
	up, err := h.fake.WaitCalls(h.waitCtx(), "views.update", 1)
	if err != nil || up[0].Error != "" {
		t.Fatalf("views.update: %v %v", err, up)
	}
	v, err := h.fake.WaitView(h.waitCtx(), func(_ int, v map[string]any) bool { return v["submit"] != nil })
	if err != nil {
		t.Fatal(err)
	}
	el := input(v, "components")
	groups, _ := el["option_groups"].([]any)
	n := 0
	for _, g := range groups {
		n += len(g.(map[string]any)["options"].([]any))
	}
	if len(groups) != 2 || n != len(tax.Tags(cases.KindComponent)) || el["options"] != nil {
		t.Errorf("%d groups with %d options for %d components", len(groups), n, len(tax.Tags(cases.KindComponent)))
	}
	if len(initialOptions(v, "components")) == 0 {
		t.Error("the inferred components are not picked")
	}
}

func TestCaptureRateLimitedThreadsDoNotStall(t *testing.T) {
	// Slack may allow a few thread reads a minute: a rate-limited thread
	// read leaves the thread out instead of holding the draft for a minute.
	h := startCapture(t)
	incidentHistory(h.fake, incChannel, 1764583200)
	h.fake.FailNext("conversations.replies", 1, slackfake.Fault{Status: 429, RetryAfter: time.Minute})
	h.ack(h.fake.SendSlashCommand(map[string]string{"command": "/incidents", "text": "capture", "channel_id": incChannel, "user_id": capturer}))
	v := h.draftView(0)
	if !strings.Contains(initialText(v, "helped"), "rolled back cart-service") {
		t.Errorf("draft without the channel's messages: %q", initialText(v, "helped"))
	}
}
