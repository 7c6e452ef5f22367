package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/internal/slackfake"
)

// TestCapturedCaseSuggestedInAnotherChannel runs `incidentbot run` on
// SQLite, captures an incident channel with the message shortcut, saves the
// draft, and checks that the next similar alert in another channel is
// answered with the saved case, with no restart or reload.
func TestCapturedCaseSuggestedInAnotherChannel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := slackfake.New()
	t.Cleanup(fake.Close)
	fake.AddChannel("C0INCA", "inc-cart", false)
	fake.AddChannel("C0INCB", "inc-payments", false)
	fake.SetChannelTopic("C0INCA", "Cart checkout failing: redis client pool exhausted", "")
	dir := diskLibrary(t)

	at := func(min int) string { return fmt.Sprintf("%d.000100", 1764583200+min*60) }
	fake.AddMessage("C0INCA", map[string]any{"ts": at(0), "subtype": "bot_message", "bot_id": "B0AM", "text": "",
		"attachments": []any{map[string]any{"title": "[FIRING:1] CartRedisTimeouts (prod cart-service)",
			"text": "cart-service redis command timeouts above 20/s; checkout failing with 500"}}})
	fake.AddMessage("C0INCA", map[string]any{"ts": at(3), "user": "U1", "text": "declaring SEV2, redis client connection pool exhausted after the v3.14 deploy"})
	fix := fake.AddMessage("C0INCA", map[string]any{"ts": at(15), "user": "U2", "text": "rolled back cart-service to v3.13, redis pool back to 50 per pod",
		"reactions": []any{map[string]any{"name": "white_check_mark", "count": 1, "users": []any{"U1"}}}})
	fake.AddMessage("C0INCA", map[string]any{"ts": at(30), "user": "U1", "text": "resolved, checkout error rate back to normal"})
	fake.AddMessage("C0INCA", map[string]any{"ts": at(31), "user": "U1", "text": "TODO: pin the redis pool size in cart-service config"})

	logs := newLogWatch()
	envs := map[string]string{"SLACK_APP_TOKEN": "xapp-1", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_API_URL": fake.APIURL()}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"run", "--builtin=false", "--cases", dir, "--db", filepath.Join(t.TempDir(), "a.db"), "--listen", ""},
			env{stdin: strings.NewReader(""), stdout: logs, stderr: logs, getenv: func(k string) string { return envs[k] }, reload: make(chan os.Signal)})
	}()
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	if err := fake.WaitConnected(wctx, 1); err != nil {
		t.Fatal(err)
	}

	fake.SendInteractive(map[string]any{"type": "message_action", "callback_id": "capture_case", "user": map[string]any{"id": "U1"},
		"channel": map[string]any{"id": "C0INCA", "name": "inc-cart"}, "message_ts": fix,
		"message": map[string]any{"type": "message", "ts": fix, "user": "U2", "text": "rolled back"}})
	v, err := fake.WaitView(wctx, func(_ int, v map[string]any) bool { return v["submit"] != nil })
	if err != nil {
		t.Fatalf("no draft: %v\n%s", err, logs)
	}
	ack, err := fake.WaitAck(wctx, fake.SubmitView("U1", v["id"].(string), nil))
	if err != nil || len(ack) > 0 && string(ack) != "null" {
		t.Fatalf("save answered %s, %v\n%s", ack, err, logs)
	}
	confirm, err := fake.WaitCall(wctx, func(c slackfake.Call) bool {
		return c.Method == "chat.postMessage" && c.Channel == "C0INCA" && strings.Contains(c.Text, "saved this incident")
	})
	if err != nil {
		t.Fatalf("no confirmation: %v\n%s", err, logs)
	}
	id := strings.Split(confirm.Text, "`")[1]

	fake.SendEvent(alertEvent("C0INCB", "1764600000.000100", "[FIRING:1] CartRedisTimeouts (prod cart-service)",
		"redis command timeouts in cart-service, connection pool exhausted; checkout failing"))
	reply, err := fake.WaitCall(wctx, func(c slackfake.Call) bool {
		return c.Method == "chat.postMessage" && c.ThreadTS == "1764600000.000100"
	})
	if err != nil {
		t.Fatalf("the next alert was not answered: %v\n%s", err, logs)
	}
	blocks, _ := json.Marshal(reply.Blocks)
	if !strings.Contains(string(blocks), id) {
		t.Errorf("the next similar alert in another channel was not answered with %s: %s", id, blocks)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("run exited %d\n%s", code, logs)
	}
}
