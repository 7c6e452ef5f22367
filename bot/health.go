package bot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// health keeps the last known state of each part the bot depends on, so
// that probes answer from memory: a probe never reaches the database or
// Slack, and a burst of probes costs nothing.
type health struct {
	mu        sync.Mutex
	parts     map[string]partState // Options.Checks, by name
	reloadErr error                // the last library reload's failure; nil after a good one
}

// partState is what the last check of a part found.
type partState struct {
	checked bool
	err     error
	since   time.Time // when it last changed between ok and failing
}

// checkTimeout bounds one check of a part.
const checkTimeout = 2 * time.Second

// runChecks checks every part of Options.Checks at once and then every
// CheckEvery, until ctx ends, logging when a part starts or stops failing.
// The error a check returns is logged, never shown to a probe: it may name
// a database's address or user.
func (b *Bot) runChecks(ctx context.Context) {
	if len(b.opts.Checks) == 0 {
		return
	}
	t := time.NewTicker(b.opts.CheckEvery)
	defer t.Stop()
	for {
		for _, name := range sortedNames(b.opts.Checks) {
			cctx, cancel := context.WithTimeout(ctx, checkTimeout)
			err := b.opts.Checks[name](cctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			b.setPart(name, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (b *Bot) setPart(name string, err error) {
	b.health.mu.Lock()
	prev := b.health.parts[name]
	changed := !prev.checked || (prev.err == nil) != (err == nil)
	st := partState{checked: true, err: err, since: prev.since}
	if changed {
		st.since = time.Now()
	}
	b.health.parts[name] = st
	b.health.mu.Unlock()
	switch {
	case err != nil && (changed || !errors.Is(err, prev.err)):
		b.log.Warn("health check failing", "part", name, "err", err)
	case err == nil && changed && prev.checked:
		b.log.Info("health check ok again", "part", name, "failed_for", time.Since(prev.since).Round(time.Second).String())
	}
}

// SetLibraryStatus records the outcome of the last reload of the case
// library: nil after a good one, the error after one that failed and left
// the previous library in place. A failure is shown on /healthz, /readyz
// and /healthz/library; it does not make the bot unready, since it still
// answers from the previous library.
func (b *Bot) SetLibraryStatus(err error) {
	b.health.mu.Lock()
	b.health.reloadErr = err
	b.health.mu.Unlock()
}

// report is the state of every part, as probes show it.
type report struct {
	lines    map[string]string // part -> "ok" or "failing…"
	answers  bool              // the library is loaded and Socket Mode is connected
	ready    bool              // answers, and every checked part is ok
	partFail map[string]bool
}

func (b *Bot) report() report {
	r := report{lines: map[string]string{}, partFail: map[string]bool{}}
	lib := b.searcher() != nil
	sock := b.Healthy()
	r.answers = lib && sock
	r.ready = r.answers
	if sock {
		r.lines["socket"] = "ok"
	} else {
		r.lines["socket"] = "failing: not connected to Slack"
		r.partFail["socket"] = true
	}
	b.health.mu.Lock()
	defer b.health.mu.Unlock()
	switch {
	case !lib:
		r.lines["library"] = "failing: not loaded"
		r.partFail["library"] = true
	case b.health.reloadErr != nil:
		r.lines["library"] = "ok (the last reload failed, the previous library is in use: " + oneLine(b.health.reloadErr.Error()) + ")"
	default:
		r.lines["library"] = "ok"
	}
	for _, name := range sortedNames(b.opts.Checks) {
		st := b.health.parts[name]
		switch {
		case !st.checked:
			r.lines[name] = "failing: not checked yet"
		case st.err != nil:
			r.lines[name] = "failing since " + st.since.UTC().Format(time.RFC3339) + " (the log says why)"
		default:
			r.lines[name] = "ok"
			continue
		}
		r.partFail[name] = true
		r.ready = false
	}
	return r
}

func (r report) text() string {
	names := make([]string, 0, len(r.lines))
	for n := range r.lines {
		names = append(names, n)
	}
	slices.Sort(names)
	var sb strings.Builder
	for _, n := range names {
		fmt.Fprintf(&sb, "%s: %s\n", n, r.lines[n])
	}
	return sb.String()
}

func oneLine(s string) string {
	return clip(strings.Join(strings.Fields(s), " "), 300)
}

// Handler serves the probes and the metrics:
//
//   - GET /livez: 200 while the process runs. It never fails because Slack,
//     the database or the case library is away: restarting would not bring
//     them back.
//   - GET /readyz: 200 when the case library is loaded, the Socket Mode
//     connection is up and every part of Options.Checks (the activity
//     store) was ok at its last check; 503 otherwise.
//   - GET /healthz: 200 while the bot answers (library loaded, Socket Mode
//     connected), even with the store down, as a replica answers from its
//     index then; 503 otherwise.
//   - GET /healthz/NAME: 200 or 503 for one part (socket, library, or a
//     name of Options.Checks).
//   - GET /metrics: the Prometheus text format.
//
// Every probe answers from the state the bot keeps (the checks run in the
// background every CheckEvery) and lists the parts, without connection
// details.
func (b *Bot) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	serve := func(w http.ResponseWriter, ok bool, body string) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprint(w, body)
	}
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		rep := b.report()
		serve(w, rep.ready, rep.text())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		rep := b.report()
		serve(w, rep.answers, rep.text())
	})
	mux.HandleFunc("GET /healthz/{part}", func(w http.ResponseWriter, r *http.Request) {
		part := r.PathValue("part")
		rep := b.report()
		line, ok := rep.lines[part]
		if !ok {
			http.Error(w, "no such part: "+part, http.StatusNotFound)
			return
		}
		serve(w, !rep.partFail[part], part+": "+line+"\n")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(b.opts.Registry, promhttp.HandlerOpts{}))
	return mux
}

func sortedNames(m map[string]func(context.Context) error) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
