package cases_test

import (
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
