package digest_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/digest"
	"github.com/incidentbot/incidentbot/internal/pgtest"
	"github.com/incidentbot/incidentbot/store"
	"github.com/incidentbot/incidentbot/store/postgres"
	"github.com/incidentbot/incidentbot/store/sqlite"
)

// poster records the digests it is asked to post.
type poster struct {
	mu        sync.Mutex
	posts     []posted
	fail      int       // fail this many posts first
	downUntil time.Time // fail every post before this time: a Slack outage
	tried     int       // posts asked for, failed or not
}

type posted struct {
	channel string
	at      time.Time
	d       *digest.Digest
}

func (p *poster) PostDigest(_ context.Context, channel string, d *digest.Digest) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tried++
	if time.Now().Before(p.downUntil) {
		return "", fmt.Errorf("slack is down")
	}
	if p.fail > 0 {
		p.fail--
		return "", fmt.Errorf("slack said no")
	}
	p.posts = append(p.posts, posted{channel: channel, at: time.Now(), d: d})
	return fmt.Sprintf("%d.000100", len(p.posts)), nil
}

func (p *poster) all() []posted {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]posted(nil), p.posts...)
}

func library(t *testing.T) *cases.Library {
	t.Helper()
	set, err := cases.Load("../matcher/testdata/library", cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	lib, _ := cases.NewLibrary(set)
	return lib
}

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "activity.db"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func target(t *testing.T, spec string) digest.Target {
	t.Helper()
	tg, err := digest.ParseTarget(spec)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func newScheduler(t *testing.T, st digest.Store, p digest.Poster, owner string, targets ...digest.Target) *digest.Scheduler {
	lib := library(t)
	return digest.New(digest.Options{Targets: targets, Store: st, Poster: p, Owner: owner, Library: func() *cases.Library { return lib }})
}

// seed records suggestions at the given times in channel.
func seed(t *testing.T, st store.Store, channel string, private bool, times ...time.Time) {
	t.Helper()
	for i, at := range times {
		err := st.RecordSuggestion(context.Background(), store.Suggestion{Key: fmt.Sprintf("%s-%d-%d", channel, at.Unix(), i), Time: at,
			Channel: channel, Private: private, Source: store.SourceAlert, Lang: "en",
			Symptoms: []string{"crash-loop", "memory-exhaustion"}, Components: []string{"kubernetes-nodes"},
			Cases: []store.ScoredCase{{CaseID: "tl-010", Score: 0.9}, {CaseID: "tl-022", Score: 0.5}}})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestScheduleFiresAtLocalTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The bubble's clock starts at 2000-01-01 00:00 UTC, a Saturday.
		st := openStore(t)
		defer st.Close()
		seed(t, st, "C1", false, time.Now().Add(-24*time.Hour), time.Now().Add(-2*time.Hour))
		p := &poster{}
		s := newScheduler(t, st, p, "r1", target(t, "C1;CRON_TZ=Asia/Seoul 0 9 * * MON;ko"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()
		time.Sleep(9 * 24 * time.Hour)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		posts := p.all()
		if len(posts) != 2 {
			t.Fatalf("%d digests in 9 days, want 2", len(posts))
		}
		seoul, _ := time.LoadLocation("Asia/Seoul")
		for _, ps := range posts {
			local := ps.at.In(seoul)
			if local.Weekday() != time.Monday || local.Hour() != 9 || local.Minute() != 0 {
				t.Errorf("posted at %v (Seoul), want Monday 09:00", local)
			}
		}
		first := posts[0].d
		if first.Week.Key != "1999-W52" || first.Suggestions != 2 || first.Lang != cases.Korean {
			t.Errorf("first digest: week %s, %d suggestions, lang %s", first.Week.Key, first.Suggestions, first.Lang)
		}
		if !posts[1].d.Quiet {
			t.Error("the second week had no activity but is not quiet")
		}
	})
}

// startAndStop starts a scheduler, in a synctest bubble, lets it do what it
// does at start, and stops it: a restart of the bot.
func startAndStop(t *testing.T, s *digest.Scheduler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	synctest.Wait()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestMissedRunPostedOnceAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		defer st.Close()
		p := &poster{}
		tg := target(t, "C1;0 9 * * MON;en")
		// Monday 2000-01-03 09:00 UTC passes while the bot is down; it
		// starts at 13:00, within the 12-hour grace period.
		time.Sleep(2*24*time.Hour + 13*time.Hour)
		for restart := range 3 {
			startAndStop(t, newScheduler(t, st, p, fmt.Sprintf("r%d", restart), tg))
		}
		if n := len(p.all()); n != 1 {
			t.Fatalf("%d digests after three restarts, want 1", n)
		}
	})
}

func TestMissedRunBeyondGraceSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		defer st.Close()
		p := &poster{}
		time.Sleep(2*24*time.Hour + 22*time.Hour) // 13 hours after Monday 09:00
		startAndStop(t, newScheduler(t, st, p, "r1", target(t, "C1")))
		if n := len(p.all()); n != 0 {
			t.Fatalf("posted %d digests for a run missed beyond the grace period", n)
		}
	})
}

// TestSchedulersReleasedTogetherPostOnce contests the digest claim: four
// replicas, each with its own handle on one shared store, load everything
// they need, wait at a barrier and are released together to post the same
// week's digest. Over many weeks, each is posted exactly once.
func TestSchedulersReleasedTogetherPostOnce(t *testing.T) {
	for _, backend := range []struct {
		name string
		open func(t *testing.T) func() digest.Store
	}{
		{"sqlite", func(t *testing.T) func() digest.Store {
			path := filepath.Join(t.TempDir(), "activity.db")
			return func() digest.Store {
				s, err := sqlite.Open(context.Background(), path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
		}},
		{"postgres", func(t *testing.T) func() digest.Store {
			url := pgtest.Schema(t, "digest")
			return func() digest.Store {
				s, err := postgres.Open(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
		}},
	} {
		t.Run(backend.name, func(t *testing.T) {
			open := backend.open(t)
			const replicas, weeks = 4, 15
			p := &poster{}
			tg := target(t, "C1")
			lib := library(t)
			var scheds []*digest.Scheduler
			for i := range replicas {
				scheds = append(scheds, digest.New(digest.Options{Targets: []digest.Target{tg}, Store: open(), Poster: p,
					Owner: fmt.Sprintf("replica-%d", i), Library: func() *cases.Library { return lib }, Backoff: 5 * time.Millisecond}))
			}
			first := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
			for w := range weeks {
				run := first.AddDate(0, 0, 7*w)
				gate := make(chan struct{})
				var ready, wg sync.WaitGroup
				reported := make([]bool, replicas)
				for i, s := range scheds {
					ready.Add(1)
					wg.Go(func() {
						ready.Done()
						<-gate
						ok, err := s.Post(context.Background(), tg, run)
						if err != nil {
							t.Error(err)
						}
						reported[i] = ok
					})
				}
				ready.Wait()
				close(gate)
				wg.Wait()
				n := 0
				for _, ok := range reported {
					if ok {
						n++
					}
				}
				if n != 1 {
					t.Errorf("week of %s: %d schedulers report posting it, want 1", run.Format("2006-01-02"), n)
				}
			}
			perWeek := map[string]int{}
			for _, ps := range p.all() {
				perWeek[ps.d.Week.Key]++
			}
			if len(perWeek) != weeks {
				t.Errorf("%d weeks posted, want %d", len(perWeek), weeks)
			}
			for wk, n := range perWeek {
				if n != 1 {
					t.Errorf("week %s posted %d times by %d schedulers released together", wk, n, replicas)
				}
			}
		})
	}
}

func TestFailedPostIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		defer st.Close()
		p := &poster{fail: 2}
		tg := target(t, "C1")
		s := newScheduler(t, st, p, "r1", tg)
		ok, err := s.Post(context.Background(), tg, time.Now())
		if err != nil || !ok || len(p.all()) != 1 {
			t.Fatalf("ok=%v err=%v posts=%d", ok, err, len(p.all()))
		}
		rec, posted, err := st.DigestPosted(context.Background(), "C1", p.all()[0].d.Week.Key)
		if err != nil || !posted || rec.MessageTS == "" {
			t.Errorf("not recorded as posted: %+v %v %v", rec, posted, err)
		}
	})
}

// TestSlackOutageDelaysDigest: Slack fails every post from just before
// Monday 09:00 until 09:40. The digest is posted once, soon after Slack is
// back, not lost after a few quick retries.
func TestSlackOutageDelaysDigest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		defer st.Close()
		seed(t, st, "C1", false, time.Now().Add(-24*time.Hour))
		monday := time.Date(2000, 1, 3, 9, 0, 0, 0, time.UTC)
		back := monday.Add(40 * time.Minute)
		p := &poster{downUntil: back}
		s := newScheduler(t, st, p, "r1", target(t, "C1"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()
		time.Sleep(time.Until(monday.Add(2 * time.Hour)))
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		posts := p.all()
		if len(posts) != 1 {
			t.Fatalf("%d digests posted after a 40-minute outage (%d attempts), want 1", len(posts), p.tried)
		}
		// Backoff doubles up to half the 10-minute lease.
		if at := posts[0].at; at.Before(back) || at.After(back.Add(5*time.Minute)) {
			t.Errorf("posted at %v, want within 5 minutes of Slack's return at %v", at, back)
		}
		if p.tried > 12 {
			t.Errorf("%d attempts in 40 minutes: no backoff", p.tried)
		}
		if _, ok, err := st.DigestPosted(context.Background(), "C1", posts[0].d.Week.Key); err != nil || !ok {
			t.Errorf("not recorded as posted: %v %v", ok, err)
		}
	})
}

// TestOutageOutlastingGraceGivesUp: Slack is down past the grace period;
// Post gives up with an error at its end instead of trying forever.
func TestOutageOutlastingGraceGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		defer st.Close()
		run := time.Now()
		p := &poster{downUntil: run.Add(24 * time.Hour)}
		tg := target(t, "C1")
		lib := library(t)
		s := digest.New(digest.Options{Targets: []digest.Target{tg}, Store: st, Poster: p, Owner: "r1", Grace: time.Hour,
			Library: func() *cases.Library { return lib }})
		ok, err := s.Post(context.Background(), tg, run)
		if ok || err == nil {
			t.Fatalf("Post = %v, %v; want an error after the grace period", ok, err)
		}
		if took := time.Since(run); took > time.Hour {
			t.Errorf("gave up after %v, beyond the 1h grace period", took)
		}
	})
}

// TestHolderStopsDuringOutageAnotherReplicaPosts: the replica holding the
// week's claim stops while Slack is down. Its claim lapses and the other
// replica, which found it held, posts the digest once Slack is back.
func TestHolderStopsDuringOutageAnotherReplicaPosts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openStore(t)
		defer st.Close()
		seed(t, st, "C1", false, time.Now().Add(-24*time.Hour))
		monday := time.Date(2000, 1, 3, 9, 0, 0, 0, time.UTC)
		p := &poster{downUntil: monday.Add(20 * time.Minute)}
		tg := target(t, "C1")
		a, b := newScheduler(t, st, p, "replica-a", tg), newScheduler(t, st, p, "replica-b", tg)
		time.Sleep(time.Until(monday))
		actx, stopA := context.WithCancel(context.Background())
		aDone := make(chan error)
		go func() { _, err := a.Post(actx, tg, monday); aDone <- err }()
		synctest.Wait() // a holds the claim and waits to try again
		bDone := make(chan error)
		go func() {
			ok, err := b.Post(context.Background(), tg, monday)
			if !ok && err == nil {
				err = fmt.Errorf("replica-b did not post")
			}
			bDone <- err
		}()
		time.Sleep(5 * time.Minute)
		stopA()
		if err := <-aDone; err == nil {
			t.Error("the stopped replica's Post returned no error")
		}
		if err := <-bDone; err != nil {
			t.Fatal(err)
		}
		posts := p.all()
		if len(posts) != 1 {
			t.Fatalf("%d digests posted, want 1", len(posts))
		}
		rec, ok, err := st.DigestPosted(context.Background(), "C1", posts[0].d.Week.Key)
		if err != nil || !ok || rec.ClaimedBy != "replica-b" {
			t.Errorf("record %+v, posted %v, %v: want posted by replica-b", rec, ok, err)
		}
		// The claim lapsed after its 10-minute lease; the outage ended at 09:20.
		if at := posts[0].at; at.After(monday.Add(30 * time.Minute)) {
			t.Errorf("posted at %v, long after the holder's lease lapsed and Slack was back", at)
		}
	})
}

func TestComposeCountsAndPrivacy(t *testing.T) {
	lib := library(t)
	week := digest.WeekBefore(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), time.UTC)
	at := week.From.Add(time.Hour)
	sug := func(ch string, private bool, sym ...string) store.Suggestion {
		return store.Suggestion{Time: at, Channel: ch, Private: private, Symptoms: sym, Components: []string{"relational-database"},
			Cases: []store.ScoredCase{{CaseID: "tl-001"}}}
	}
	in := digest.Input{Target: "C1", Lang: cases.English, Week: week, Library: lib,
		This: []store.Suggestion{sug("C1", false, "connection-exhaustion"), sug("C2", false, "connection-exhaustion", "high-latency"),
			sug("G9", true, "data-exposure"), sug("C1", true, "high-latency")},
		Prev: []store.Suggestion{sug("C2", false, "high-latency")},
		Feedback: []store.Feedback{{Time: at, Channel: "C1", CaseID: "tl-001", Vote: store.NotRelevant},
			{Time: at, Channel: "G9", Private: true, CaseID: "tl-001", Vote: store.Helpful}}}
	d := digest.Compose(in)
	if d.Suggestions != 3 || d.Channels != 2 || d.PrevSuggestions != 1 {
		t.Errorf("counts: %d in %d channels, prev %d", d.Suggestions, d.Channels, d.PrevSuggestions)
	}
	for _, c := range d.Symptoms {
		if c.ID == "data-exposure" {
			t.Error("a private channel's activity was counted in another channel's digest")
		}
	}
	if d.Symptoms[0].ID != "connection-exhaustion" || d.Symptoms[0].N != 2 || d.Symptoms[0].Prev != 0 {
		t.Errorf("top symptom %+v", d.Symptoms[0])
	}
	if len(d.TopCases) != 1 || d.TopCases[0].N != 3 || d.TopCases[0].NotRelevant != 1 || d.TopCases[0].Helpful != 0 {
		t.Errorf("top cases %+v", d.TopCases)
	}
	if len(d.NotRelevant) != 1 || d.CaseOfWeek == nil {
		t.Errorf("not relevant %v, case of the week %v", d.NotRelevant, d.CaseOfWeek)
	}
	text := d.Text(cases.DefaultTaxonomy())
	for _, leak := range []string{"G9", "C2", "C1"} {
		if strings.Contains(text, leak) {
			t.Errorf("digest names a channel (%s):\n%s", leak, text)
		}
	}
	// The private channel's own digest counts its activity.
	in.Target = "G9"
	if d := digest.Compose(in); d.Suggestions != 3 {
		t.Errorf("private channel's own digest counts %d", d.Suggestions)
	}
}

func TestQuietWeekAndKorean(t *testing.T) {
	lib := library(t)
	week, err := digest.ParseWeek("2026-W48", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	d := digest.Compose(digest.Input{Target: "C1", Lang: cases.Korean, Week: week, Library: lib})
	text := d.Text(cases.DefaultTaxonomy())
	if !d.Quiet || !strings.Contains(text, "조용한 한 주") || !strings.Contains(text, "주간 장애 다이제스트, 2026-W48 (2026-11-23 ~ 2026-11-29)") {
		t.Errorf("quiet Korean digest:\n%s", text)
	}
	if n := strings.Count(strings.TrimSpace(text), "\n"); n > 3 {
		t.Errorf("a quiet week takes %d lines", n+1)
	}
}

func TestParseTarget(t *testing.T) {
	for _, bad := range []string{"", ";0 9 * * MON", "C1;0 9 * *", "C1;CRON_TZ=Mars/Olympus 0 9 * * MON", "C1;0 9 * * MON;fr", "C1;a;b;c;d", "C1;@every", "C1;CRON_TZ=", "C1;TZ=UTC"} {
		if _, err := digest.ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) accepted", bad)
		} else if !strings.Contains(err.Error(), "digest target") {
			t.Errorf("error does not name the target: %v", err)
		}
	}
	tg := target(t, "C1;CRON_TZ=Asia/Seoul 30 8 * * FRI;ko")
	next := tg.Next(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	if want := "2026-12-04T08:30:00+09:00"; next.Format(time.RFC3339) != want {
		t.Errorf("next run %v, want %s", next.Format(time.RFC3339), want)
	}
}

func TestParseWeek(t *testing.T) {
	w, err := digest.ParseWeek("2026-W01", time.UTC)
	if err != nil || w.From.Format("2006-01-02") != "2025-12-29" {
		t.Errorf("2026-W01 = %v, %v", w.From, err)
	}
	for _, bad := range []string{"2026-48", "2026-W54", "2021-W53", "x"} {
		if _, err := digest.ParseWeek(bad, time.UTC); err == nil {
			t.Errorf("ParseWeek(%q) accepted", bad)
		}
	}
}

func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"C1;0 9 * * MON;ko", "C1;CRON_TZ=Asia/Seoul 0 9 * * MON", "C1;@every 1s", "C1;* * * * * * *", "C1;0-70 * * * *", "C1;*/0 * * * *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := digest.ParseTarget(s)
		if err == nil {
			_ = tg.Next(time.Now())
			_ = tg.Prev(time.Now())
		}
	})
}
