package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// stalledReader is standard input that never delivers a byte, like
// `sleep 30 | incidentbot match`; started is closed at the first Read.
type stalledReader struct {
	started chan struct{}
	never   chan struct{}
}

func (s *stalledReader) Read([]byte) (int, error) {
	select {
	case <-s.started:
	default:
		close(s.started)
	}
	<-s.never
	return 0, nil
}

// Ctrl-C (the context ending) stops match while it waits for standard
// input, in both single and batch mode.
func TestMatchStdinHonoursInterrupt(t *testing.T) {
	dir := diskLibrary(t) // a one-case library: quick to index before --batch reads
	for _, args := range [][]string{{"match"}, {"match", "--batch"}} {
		args = append(args, "--builtin=false", "--cases", dir)
		t.Run(strings.Join(args[:len(args)-3], " "), func(t *testing.T) {
			in := &stalledReader{started: make(chan struct{}), never: make(chan struct{})}
			defer close(in.never)
			var out, errOut bytes.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, args, env{stdin: in, stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }})
			}()
			<-in.started
			cancel()
			select {
			case code := <-done:
				if code == 0 {
					t.Errorf("exit 0 after an interrupt; want failure")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("match kept waiting on standard input after the interrupt")
			}
		})
	}
}
