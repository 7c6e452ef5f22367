package bot_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/bot"
	"github.com/incidentbot/incidentbot/internal/slackfake"
)

// storeCheck is a health check of a fake store: it fails with an error that
// names the database, as a driver's error does, while down is set, and
// counts its calls.
type storeCheck struct {
	mu    sync.Mutex
	down  bool
	calls int
	call  chan struct{} // receives after each call returns
}

// connDetails is what a PostgreSQL driver's error says about the database.
const connDetails = `failed to connect to user=incidentbot database=activity host=10.1.2.3`

func newStoreCheck(down bool) *storeCheck {
	return &storeCheck{down: down, call: make(chan struct{}, 1000)}
}

func (c *storeCheck) check(context.Context) error {
	c.mu.Lock()
	c.calls++
	down := c.down
	c.mu.Unlock()
	defer func() { c.call <- struct{}{} }()
	if down {
		return errors.New(connDetails + ": dial tcp 10.1.2.3:5432: connect: connection refused")
	}
	return nil
}

func (c *storeCheck) set(down bool) {
	c.mu.Lock()
	c.down = down
	c.mu.Unlock()
}

func (c *storeCheck) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// waitFor polls a probe until it answers want, for at most 10 s.
func waitFor(t *testing.T, h http.Handler, path string, want int) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := get(t, h, path)
		if code == want {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %d, want %d:\n%s", path, code, want, body)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestProbesWithStoreDown: with the database away, liveness and /healthz
// hold (the bot answers from its index), readiness fails, no probe shows
// the database's address or user, and probes never reach the store: they
// answer from the last background check.
func TestProbesWithStoreDown(t *testing.T) {
	chk := newStoreCheck(true)
	h := start(t, func(o *bot.Options) {
		o.Checks = map[string]func(context.Context) error{"store": chk.check}
		o.CheckEvery = time.Hour // only the check at start runs in this test
	})
	srv := h.bot.Handler()
	waitFor(t, srv, "/healthz/socket", http.StatusOK)
	<-chk.call
	body := waitFor(t, srv, "/readyz", http.StatusServiceUnavailable)
	if !strings.Contains(body, "store: failing") {
		t.Errorf("/readyz body does not name the failing part:\n%s", body)
	}
	before := chk.count()
	for _, p := range []string{"/livez", "/healthz", "/readyz", "/healthz/store", "/healthz/socket", "/healthz/library"} {
		for range 50 {
			code, body := get(t, srv, p)
			for _, leak := range []string{"10.1.2.3", "incidentbot", "activity", "5432"} {
				if strings.Contains(body, leak) {
					t.Fatalf("%s shows %q of the connection details:\n%s", p, leak, body)
				}
			}
			want := map[string]int{"/livez": 200, "/healthz": 200, "/readyz": 503, "/healthz/store": 503, "/healthz/socket": 200, "/healthz/library": 200}[p]
			if code != want {
				t.Fatalf("%s = %d with the store down, want %d:\n%s", p, code, want, body)
			}
		}
	}
	if n := chk.count() - before; n != 0 {
		t.Errorf("300 probes ran the store check %d times, want 0 (answer from the last check)", n)
	}
	if code, _ := get(t, srv, "/healthz/nosuch"); code != http.StatusNotFound {
		t.Errorf("/healthz/nosuch = %d, want 404", code)
	}
}

// TestReadyAgainWhenStoreBack: the background check notices the store
// coming back, and a failed library reload shows on the probes without
// making the bot unready.
func TestReadyAgainWhenStoreBack(t *testing.T) {
	chk := newStoreCheck(true)
	h := start(t, func(o *bot.Options) {
		o.Checks = map[string]func(context.Context) error{"store": chk.check}
		o.CheckEvery = 10 * time.Millisecond
	})
	srv := h.bot.Handler()
	waitFor(t, srv, "/healthz/socket", http.StatusOK)
	waitFor(t, srv, "/readyz", http.StatusServiceUnavailable)
	chk.set(false)
	// The second call that returns after the change has stored an ok.
	for range 2 {
		<-chk.call
	}
	waitFor(t, srv, "/readyz", http.StatusOK)

	h.bot.SetLibraryStatus(errors.New("load cases/bad.yaml: line 3: mapping values are not allowed"))
	code, body := get(t, srv, "/readyz")
	if code != http.StatusOK || !strings.Contains(body, "the last reload failed") || !strings.Contains(body, "cases/bad.yaml") {
		t.Errorf("/readyz after a failed reload = %d, want 200 and the failure shown:\n%s", code, body)
	}
	h.bot.SetLibraryStatus(nil)
	if _, body := get(t, srv, "/healthz/library"); strings.Contains(body, "reload failed") {
		t.Errorf("a good reload still shows the old failure:\n%s", body)
	}
}

// TestProbesBeforeSlackConnects: liveness never depends on Slack; readiness
// and /healthz wait for the Socket Mode connection.
func TestProbesBeforeSlackConnects(t *testing.T) {
	fake := slackfake.New()
	defer fake.Close()
	b, err := bot.New(testMatcher(t), bot.Options{AppToken: "xapp-1-test", BotToken: "xoxb-test", APIURL: fake.APIURL()})
	if err != nil {
		t.Fatal(err)
	}
	srv := b.Handler()
	for p, want := range map[string]int{"/livez": 200, "/readyz": 503, "/healthz": 503, "/healthz/socket": 503} {
		if code, body := get(t, srv, p); code != want {
			t.Errorf("%s = %d before connecting, want %d:\n%s", p, code, want, body)
		}
	}
}
