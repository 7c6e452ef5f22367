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
	"github.com/incidentbot/incidentbot/store"
	"github.com/incidentbot/incidentbot/store/sqlite"
)

// poster records the digests it is asked to post.
type poster struct {
	mu    sync.Mutex
	posts []posted
	fail  int // fail this many posts first
}

type posted struct {
	channel string
	at      time.Time
	d       *digest.Digest
}

func (p *poster) PostDigest(_ context.Context, channel string, d *digest.Digest) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
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

func TestTwoRunsForOneWeekPostOnce(t *testing.T) {
	st := openStore(t)
	defer st.Close()
	p := &poster{}
	tg := target(t, "C1")
	run := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	var mu sync.Mutex
	posted := 0
	for i := range 4 {
		s := newScheduler(t, st, p, fmt.Sprintf("replica-%d", i), tg)
		wg.Go(func() {
			ok, err := s.Post(context.Background(), tg, run.Add(time.Duration(i)*time.Second))
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				posted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if posted != 1 || len(p.all()) != 1 {
		t.Errorf("%d posts (%d reported), want 1", len(p.all()), posted)
	}
}

func TestFailedPostIsRetried(t *testing.T) {
	st := openStore(t)
	defer st.Close()
	p := &poster{fail: 2}
	tg := target(t, "C1")
	s := newScheduler(t, st, p, "r1", tg)
	ok, err := s.Post(context.Background(), tg, time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	if err != nil || !ok || len(p.all()) != 1 {
		t.Fatalf("ok=%v err=%v posts=%d", ok, err, len(p.all()))
	}
	rec, posted, err := st.DigestPosted(context.Background(), "C1", "2026-W48")
	if err != nil || !posted || rec.MessageTS == "" {
		t.Errorf("not recorded as posted: %+v %v %v", rec, posted, err)
	}
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
