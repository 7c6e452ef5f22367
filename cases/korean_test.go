package cases_test

import (
	"encoding/json"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
)

func TestNormalizeKoreanSpacing(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Let's Encrypt 가 만료됐다", "Let's Encrypt가 만료됐다"},
		{"Storage 의 지연", "Storage의 지연"},
		{"15:46 UTC 부터 SERVFAIL 을 줬다.", "15:46 UTC부터 SERVFAIL을 줬다."},
		{"AWS 와 GCP 와 Azure 에서", "AWS와 GCP와 Azure에서"},
		{"Prolexic 이 경로를", "Prolexic이 경로를"},
		{"CPU 와\n메모리", "CPU와\n메모리"},
		{"(HTTPS) 로 전송", "(HTTPS)로 전송"},
		{"09:30 쯤부터", "09:30쯤부터"},
		// Left alone: a demonstrative after a sentence or a quote, a noun
		// that starts like a particle, and spacing that is already right.
		{"응답한다. 이 컴포넌트는", "응답한다. 이 컴포넌트는"},
		{`"zoning" 이 절차`, `"zoning" 이 절차`},
		{"DNS 하나가", "DNS 하나가"},
		{"DNS 이후", "DNS 이후"},
		{"API 는커녕", "API 는커녕"},
		{"Let's Encrypt가 만료됐다", "Let's Encrypt가 만료됐다"},
		{"", ""},
	} {
		if got := cases.NormalizeKoreanSpacing(tc.in); got != tc.want {
			t.Errorf("NormalizeKoreanSpacing(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestImpactBilingual: impact parts may be Korean too, and a part with no
// Korean is written back as the format's plain string.
func TestImpactBilingual(t *testing.T) {
	var c cases.Case
	in := `{"id":"x","title":"t","summary":"s","impact":{"scope":"Checkout API","users":{"en":"All shoppers","ko":"모든 구매자"},"region":"서울 리전"}}`
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	if c.Impact.Users.In(cases.Korean) != "모든 구매자" || c.Impact.Region.Ko != "서울 리전" || c.Impact.Scope.En != "Checkout API" {
		t.Fatalf("impact read as %+v", c.Impact)
	}
	out, err := json.Marshal(c.Impact)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"scope":"Checkout API","users":{"en":"All shoppers","ko":"모든 구매자"},"region":{"en":"","ko":"서울 리전"}}`; string(out) != want {
		t.Errorf("impact written as %s, want %s", out, want)
	}
}
