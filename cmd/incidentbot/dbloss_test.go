package main

import (
	"context"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/internal/pgtest"
	"github.com/incidentbot/incidentbot/internal/slackfake"
	"github.com/incidentbot/incidentbot/store/postgres"
)

// tcpProxy forwards a port to PostgreSQL and can cut it, as a network
// failure between a replica and its database would.
type tcpProxy struct {
	t        *testing.T
	upstream string
	addr     string
	mu       sync.Mutex
	ln       net.Listener
	conns    []net.Conn
}

func newProxy(t *testing.T, upstream string) *tcpProxy {
	p := &tcpProxy{t: t, upstream: upstream}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *tcpProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.upstream)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
}

// cut closes every connection and refuses new ones.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// restore accepts connections again on the same address.
func (p *tcpProxy) restore() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("restore proxy: %v", err)
	}
	p.serve(ln)
}

// TestDatabaseLossKeepsAnswering cuts a replica off its PostgreSQL: it keeps
// answering from its index, /livez and /healthz stay up while /readyz and
// /healthz/store fail,
// and the suggestions it made meanwhile are written once the database is
// back.
func TestDatabaseLossKeepsAnswering(t *testing.T) {
	dbURL := pgtest.Schema(t, "dbloss")
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newProxy(t, u.Host)
	u.Host = proxy.addr
	fake := slackfake.New()
	defer fake.Close()
	fake.AddChannel("C0INC", "inc-api", false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	health := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := newLogWatch()
	envs := map[string]string{"SLACK_APP_TOKEN": "xapp-1", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_API_URL": fake.APIURL(), "DATABASE_URL": u.String()}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"run", "--listen", health, "--db", filepath.Join(t.TempDir(), "unused.db")},
			env{stdin: strings.NewReader(""), stdout: logs, stderr: logs, getenv: func(k string) string { return envs[k] }})
	}()
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	if err := fake.WaitConnected(wctx, 1); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	alert := func(ts, title, text string) {
		t.Helper()
		fake.SendEvent(map[string]any{"type": "message", "subtype": "bot_message", "bot_id": "B0AM", "text": "", "channel": "C0INC",
			"channel_type": "channel", "ts": ts, "attachments": []any{map[string]any{"title": title, "text": text}}})
		if _, err := fake.WaitCall(wctx, func(c slackfake.Call) bool { return c.Method == "chat.postMessage" && c.ThreadTS == ts }); err != nil {
			t.Fatalf("alert %s not answered: %v\n%s", ts, err, logs)
		}
	}
	alert("1700000001.000100", "[FIRING:1] KubePodCrashLooping api", "pods OOMKilled, CrashLoopBackOff")

	proxy.cut()
	alert("1700000002.000100", "[FIRING:1] SSLCertExpired billing", "x509: certificate has expired; TLS handshakes fail")
	// The probes answer from a background check that runs every few
	// seconds: wait for it to see the loss.
	if code := waitStatus(wctx, "http://"+health+"/readyz", 503); code != 503 {
		t.Errorf("/readyz = %d with the database down, want 503", code)
	}
	for path, want := range map[string]int{"/healthz": 200, "/livez": 200, "/healthz/store": 503} {
		if code, _ := httpGet(wctx, "http://"+health+path); code != want {
			t.Errorf("%s = %d with the database down, want %d (the bot still answers)", path, code, want)
		}
	}

	proxy.restore()
	cancel() // the buffered writes are flushed before run returns
	if code := <-done; code != 0 {
		t.Fatalf("exit %d\n%s", code, logs)
	}
	st, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.Suggestions(context.Background(), time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, s := range got {
		keys[s.Key] = true
	}
	for _, k := range []string{"msg:C0INC:1700000001.000100", "msg:C0INC:1700000002.000100"} {
		if !keys[k] {
			t.Errorf("suggestion %s lost; have %v\n%s", k, keys, logs)
		}
	}
}

// waitStatus polls url until it answers want or ctx ends, and returns the
// last status.
func waitStatus(ctx context.Context, url string, want int) int {
	for {
		code, _ := httpGet(ctx, url)
		if code == want {
			return code
		}
		select {
		case <-ctx.Done():
			return code
		case <-time.After(50 * time.Millisecond):
		}
	}
}
