package matcher_test

import (
	"context"
	"slices"

	"testing"

	"github.com/incidentbot/incidentbot/matcher"
)

// similarPairs are pairs of texts with whether a vote on one should speak
// for the other. SimilarThreshold was chosen on them.
var similarPairs = []struct {
	name    string
	a, b    string
	similar bool
}{
	{"same alert, other pod and count",
		"[FIRING:1] KubePodCrashLooping (prod payments)\nPod payments-7d9f8c-x2k4p restarted 5 times in 10 minutes",
		"[FIRING:3] KubePodCrashLooping (prod payments)\nPod payments-5c44b-qq81z restarted 9 times in 10 minutes", true},
	{"same alert, other host and time",
		"High p99 latency on checkout-api at 2026-11-30T10:22:01Z\nhost ip-10-0-3-17.ec2.internal p99 2300ms",
		"High p99 latency on checkout-api at 2026-12-01T04:09:55Z\nhost ip-10-0-9-201.ec2.internal p99 4100ms", true},
	{"same problem, other words around the same names",
		"checkout api p99 latency over 2s, postgres connection pool exhausted, HikariPool timeouts",
		"HikariPool connection timeouts again; postgres pool exhausted and checkout api latency up", true},
	{"same Korean alert, other numbers",
		"[FIRING:2] 결제 API 응답 지연\n결제 서버 p99 응답 시간 3200ms 초과, DB 커넥션 풀 고갈",
		"[FIRING:5] 결제 API 응답 지연\n결제 서버 p99 응답 시간 5100ms 초과, DB 커넥션 풀 고갈", true},
	{"same Korean problem, other words",
		"결제 서버 DB 커넥션 풀 고갈로 응답 지연 발생",
		"DB 커넥션 풀 고갈, 결제 서버 응답 지연 계속됨", true},
	{"different alerts, same boilerplate",
		"[FIRING:1] KubePodCrashLooping (prod payments)\nPod payments-7d9f restarted 5 times",
		"[FIRING:1] CertificateExpiringSoon (prod edge)\nx509 certificate for api.example.com expires in 3 days", false},
	{"same component, different problem",
		"postgres replication lag over 30s on the primary, replicas serving stale reads",
		"postgres disk full on the primary, writes failing with no space left on device", false},
	{"different Korean problems",
		"결제 서버 DB 커넥션 풀 고갈로 응답 지연 발생",
		"인증서 만료로 로그인 서비스 접속 불가, TLS 핸드셰이크 실패", false},
	{"Korean and English, different problems",
		"결제 서버 DB 커넥션 풀 고갈로 응답 지연 발생",
		"DNS resolution failing for internal services after resolver config change", false},
	{"same alert name, another service",
		"[FIRING:1] KubePodCrashLooping (prod payments)\nPod payments-7d9f8c-x2k4p restarted 5 times in 10 minutes",
		"[FIRING:1] KubePodCrashLooping (prod search)\nPod search-indexer-6b7f-zx9 restarted 3 times in 10 minutes", false},
	{"a thread grown around the same alert",
		"[FIRING:1] KubePodCrashLooping (prod payments)\nPod payments-7d9f8c-x2k4p restarted 5 times\nlooks like OOMKilled again\nbumping memory limits to 2Gi",
		"[FIRING:2] KubePodCrashLooping (prod payments)\nPod payments-81ab2-k2d9z restarted 7 times", true},
	{"two short messages sharing one word",
		"payments down", "search down", false},
}

func TestSimilarTexts(t *testing.T) {
	for _, p := range similarPairs {
		a, b := matcher.SignatureOf(p.a), matcher.SignatureOf(p.b)
		sim := a.Similarity(b)
		t.Logf("%-50s jaccard %.2f same fingerprint %v", p.name, sim, a.Fingerprint == b.Fingerprint && a.Fingerprint != "")
		if got := a.Similar(b); got != p.similar {
			t.Errorf("%s: similar %v, want %v (jaccard %.2f, fingerprints %q %q)", p.name, got, p.similar, sim, a.Fingerprint, b.Fingerprint)
		}
		if a.Similar(b) != b.Similar(a) {
			t.Errorf("%s: similarity is not symmetric", p.name)
		}
	}
}

func TestFingerprint(t *testing.T) {
	same := [][2]string{
		{"[FIRING:1] KubePodCrashLooping (prod payments)\nPod payments-7d9f restarted 5 times",
			"[FIRING:3] KubePodCrashLooping (prod payments)\nPod payments-8abc restarted 9 times"},
		{"Disk usage 91% on db-7.prod.example.com at 2026-11-30 10:22:01", "Disk usage 97% on db-12.prod.example.com at 2026-12-01 04:09:55"},
		{"<@U123> error rate above threshold for order 8c1f0e2a-7b1d-4f5e-9a0b-3c2d1e0f9a8b from 10.0.3.17:8080",
			"error rate above threshold for order 11aa22bb-33cc-44dd-55ee-66ff77aa88bb from 10.0.9.201:8080"},
		{"[FIRING:2] 결제 API 응답 지연 (p99 3200ms)", "[FIRING:7] 결제 API 응답 지연 (p99 5100ms)"},
		{"ＦＵＬＬ-width Alert Name", "full-width alert name"},
	}
	for _, p := range same {
		a, b := matcher.Fingerprint(p[0]), matcher.Fingerprint(p[1])
		if a == "" || a != b {
			t.Errorf("fingerprints differ for the same alert:\n%q -> %q\n%q -> %q", p[0], a, p[1], b)
		}
	}
	differ := [][2]string{
		{"[FIRING:1] KubePodCrashLooping (prod payments)", "[FIRING:1] KubePodCrashLooping (prod search)"},
		{"[FIRING:2] 결제 API 응답 지연", "[FIRING:2] 로그인 API 응답 지연"},
		{"Disk usage high on db-7.prod.example.com", "Memory usage high on db-7.prod.example.com"},
	}
	for _, p := range differ {
		if a, b := matcher.Fingerprint(p[0]), matcher.Fingerprint(p[1]); a == b {
			t.Errorf("different alerts share the fingerprint %q:\n%q\n%q", a, p[0], p[1])
		}
	}
	for _, empty := range []string{"", "help", "[FIRING:3] 12345", "<@U123> 10.0.0.1", "장애"} {
		if fp := matcher.Fingerprint(empty); fp != "" {
			t.Errorf("Fingerprint(%q) = %q, want none", empty, fp)
		}
	}
}

func FuzzSignature(f *testing.F) {
	for _, p := range similarPairs {
		f.Add(p.a, p.b)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		sa, sb := matcher.SignatureOf(a), matcher.SignatureOf(b)
		if s := sa.Similarity(sb); s < 0 || s > 1 || s != sb.Similarity(sa) {
			t.Errorf("similarity %v, reversed %v", s, sb.Similarity(sa))
		}
		if sa.Similar(sb) != sb.Similar(sa) {
			t.Error("Similar is not symmetric")
		}
	})
}

// TestVotesSteer runs votes through a real index: a not-relevant vote
// takes the leading case out of the lead, a helpful one lifts a case that
// matched, a vote on a case that did not match brings nothing in, and the
// votes that moved a case come back with it.
func TestVotesSteer(t *testing.T) {
	m := newMatcher(t, testLibrary(t), matcher.Options{})
	ctx := context.Background()
	const text = "kafka consumer lag on orders topic keeps growing, notifications delayed"
	ids := func(ans *matcher.Answer) []string {
		var out []string
		for _, r := range ans.Results {
			out = append(out, r.Case.ID)
		}
		return out
	}
	plain, err := m.Match(ctx, text, 3)
	if err != nil {
		t.Fatal(err)
	}
	base := ids(plain)
	if len(base) < 3 {
		t.Fatalf("the text matched %v; the test needs three cases", base)
	}
	none, err := m.MatchWith(ctx, text, 3, matcher.MatchOptions{})
	if err != nil || !slices.Equal(ids(none), base) {
		t.Fatalf("no votes changed the answer: %v -> %v (%v)", base, ids(none), err)
	}
	// The cases that would be shown with room for all, and the best case
	// ranked that would not.
	shown, err := m.Match(ctx, text, 40)
	if err != nil {
		t.Fatal(err)
	}
	eligible := ids(shown)
	all, err := m.Rank(ctx, text, 40)
	if err != nil {
		t.Fatal(err)
	}
	unmatched := ""
	for _, r := range all.Results {
		if !slices.Contains(eligible, r.Case.ID) {
			unmatched = r.Case.ID
			break
		}
	}
	if unmatched == "" {
		t.Fatal("every ranked case would be shown; the test needs one that would not")
	}
	within := func(got []string) bool {
		for _, id := range got {
			if !slices.Contains(eligible, id) {
				return false
			}
		}
		return true
	}

	for _, tc := range []struct {
		name   string
		boosts []matcher.Boost
		check  func(got []string) bool
		want   string
	}{
		{"not relevant once", []matcher.Boost{{CaseID: base[0], NotRelevant: 1}},
			func(got []string) bool { return len(got) > 0 && got[0] != base[0] && within(got) }, "the voted case out of the lead, and only cases that matched"},
		{"helpful on the third", []matcher.Boost{{CaseID: base[2], Helpful: 3}},
			func(got []string) bool { return slices.Index(got, base[2]) >= 0 && slices.Index(got, base[2]) < 2 }, "the third case lifted"},
		{"helpful on a case that did not match", []matcher.Boost{{CaseID: unmatched, Helpful: 100}},
			func(got []string) bool { return slices.Equal(got, base) }, "the answer unchanged"},
		{"votes beyond the cap", []matcher.Boost{{CaseID: base[0], NotRelevant: 1000}, {CaseID: base[1], Helpful: 1000}},
			within, "only cases that matched"},
	} {
		ans, err := m.MatchWith(ctx, text, 3, matcher.MatchOptions{Boosts: tc.boosts})
		if err != nil {
			t.Fatal(err)
		}
		got := ids(ans)
		if !tc.check(got) {
			t.Errorf("%s: %v -> %v, want %s", tc.name, base, got, tc.want)
		}
		for _, r := range ans.Results {
			for _, b := range tc.boosts {
				if b.CaseID == r.Case.ID && r.Votes != b {
					t.Errorf("%s: %s reports votes %+v for %+v", tc.name, r.Case.ID, r.Votes, b)
				}
			}
		}
	}
}
