package matcher_test

import (
	"testing"

	"github.com/incidentbot/incidentbot/matcher"
)

func TestInferLabelsText(t *testing.T) {
	m := newMatcher(t, testLibrary(t), matcher.Options{})
	inf := m.Infer("x509: certificate has expired; clients fail the TLS handshake with our API gateway")
	has := func(list []matcher.Inferred, id string) bool {
		for _, x := range list {
			if x.ID == id {
				return true
			}
		}
		return false
	}
	if !has(inf.Symptoms, "tls-handshake-failures") {
		t.Errorf("symptoms %v lack tls-handshake-failures", inf.Symptoms)
	}
	if !has(inf.Components, "tls-certificates") {
		t.Errorf("components %v lack tls-certificates", inf.Components)
	}
	if !has(inf.RootCauses, "expired-cert-or-credential") {
		t.Errorf("root causes %v lack expired-cert-or-credential", inf.RootCauses)
	}
	for _, list := range [][]matcher.Inferred{inf.Symptoms, inf.Components, inf.RootCauses, inf.Contributing} {
		for i, x := range list {
			if x.Score <= 0 || x.Score > 1 {
				t.Errorf("%s: score %v not in (0, 1]", x.ID, x.Score)
			}
			if len(x.Evidence) == 0 || x.Evidence[0] == "" {
				t.Errorf("%s: no evidence", x.ID)
			}
			if i > 0 && x.Score > list[i-1].Score {
				t.Errorf("%s ranked after a less sure tag: %v", x.ID, list)
			}
		}
	}
	if chatter := m.Infer("thanks all, lunch at noon?"); len(chatter.Symptoms)+len(chatter.Components)+len(chatter.RootCauses) > 0 {
		t.Errorf("chatter labelled: %+v", chatter)
	}
}

// A clause that denies an impact names the symptom only to rule it out; a
// negation that reports trouble ("cannot log in") still counts.
func TestInferIgnoresDeniedImpact(t *testing.T) {
	m := newMatcher(t, testLibrary(t), matcher.Options{})
	has := func(list []matcher.Inferred, id string) bool {
		for _, x := range list {
			if x.ID == id {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		text, symptom string
		want          bool
	}{
		{"The nightly clean-up job deleted current rows; customer data was lost and restored from backup.", "data-loss", true},
		{"The primary failed over to the replica in 40 seconds. No data was lost.", "data-loss", false},
		{"Primary failover finished in 40 seconds; no customer data was lost.", "data-loss", false},
		{"There was no standby and all of the customer data was lost with the disk.", "data-loss", true},
		{"주 데이터베이스가 40초 만에 페일오버되었습니다. 데이터 유실은 없었습니다.", "data-loss", false},
		{"Users cannot log in: the SSO provider rejects every token.", "auth-failures", true},
	} {
		inf := m.Infer(tc.text)
		if got := has(inf.Symptoms, tc.symptom); got != tc.want {
			t.Errorf("%q: %s %v, want %v (symptoms %+v)", tc.text, tc.symptom, got, tc.want, inf.Symptoms)
		}
	}
}
