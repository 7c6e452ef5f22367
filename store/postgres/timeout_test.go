package postgres_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/incidentbot/incidentbot/store/postgres"
)

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// openWithin runs postgres.Open and fails the test if it has not returned
// within limit.
func openWithin(t *testing.T, limit time.Duration, url string, opts ...postgres.Option) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		s, err := postgres.Open(t.Context(), url, opts...)
		if s != nil {
			s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("Open did not return within %v", limit)
		return nil
	}
}

// A server that accepts connections and never answers fails Open after the
// connect timeout, with a log line saying what it was doing.
func TestOpenServerThatNeverAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accept, read nothing, answer nothing
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	var logs logBuffer
	url := "postgres://incidentbot:secret@" + ln.Addr().String() + "/db?sslmode=disable"
	err = openWithin(t, 30*time.Second, url, postgres.WithConnectTimeout(500*time.Millisecond), postgres.WithLogger(slogTo(&logs)))
	if err == nil {
		t.Fatal("Open succeeded against a server that never answers")
	}
	if !strings.Contains(err.Error(), "no answer within 500ms") {
		t.Errorf("error %q does not say the server did not answer in time", err)
	}
	if strings.Contains(err.Error(), "secret") || strings.Contains(logs.String(), "secret") {
		t.Errorf("the password shows in the error or the log")
	}
	if !strings.Contains(logs.String(), "connecting to PostgreSQL") {
		t.Errorf("no log line before connecting:\n%s", logs.String())
	}
}

// A migration lock held by another replica is waited for a bounded time,
// logged, and then reported.
func TestOpenMigrationLockTimeout(t *testing.T) {
	url := schema(t)
	open(t, url).Close() // migrate first, so only the lock is waited for
	holder, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(context.Background())
	if _, err := holder.Exec(t.Context(), `SELECT pg_advisory_lock($1, hashtext(coalesce(current_schema(), '')))`, postgres.LockSpace); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	err = openWithin(t, 30*time.Second, url, postgres.WithLockTimeout(500*time.Millisecond), postgres.WithLogger(slogTo(&logs)))
	if err == nil || !strings.Contains(err.Error(), "migration lock: not granted within 500ms") {
		t.Errorf("Open with the lock held elsewhere = %v, want a lock timeout", err)
	}
	if !strings.Contains(logs.String(), "taking the schema migration lock") {
		t.Errorf("no log line before waiting for the lock:\n%s", logs.String())
	}
	// Once the holder lets go, Open succeeds and says the schema is ready.
	if _, err := holder.Exec(t.Context(), `SELECT pg_advisory_unlock_all()`); err != nil {
		t.Fatal(err)
	}
	logs = logBuffer{}
	if err := openWithin(t, 30*time.Second, url, postgres.WithLockTimeout(5*time.Second), postgres.WithLogger(slogTo(&logs))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "database schema up to date") {
		t.Errorf("no log line when the schema is ready:\n%s", logs.String())
	}
}

func slogTo(w *logBuffer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
