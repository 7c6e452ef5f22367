package matcher_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// smallTaxonomy is a taxonomy written for these tests, so that they do not
// move when the product's phrases are tuned.
func smallTaxonomy(t testing.TB) *cases.Taxonomy {
	t.Helper()
	tax, err := cases.ParseTaxonomy([]byte(`
symptoms:
  - id: tls-handshake-failures
    label: {en: "TLS errors", ko: "TLS 오류"}
    phrases:
      en: ["certificate has expired", "x509", "ssl handshake fail*"]
      ko: ["인증서 만료", "인증서 오류"]
  - id: crash-loop
    label: {en: "Crash loop", ko: "재시작 반복"}
    phrases:
      en: ["CrashLoopBackOff", "crash loop", "KubePodCrashLooping"]
      ko: ["재시작 반복", "크래시루프"]
  - id: connection-exhaustion
    label: {en: "Connection exhaustion", ko: "커넥션 고갈"}
    phrases:
      en: ["too many connections", "connection pool exhausted"]
      ko: ["커넥션 풀 고갈", "커넥션 부족"]
  - id: high-latency
    label: {en: "High latency", ko: "지연 증가"}
    phrases:
      en: ["p99 latency", "latency spike"]
      ko: ["응답 지연", "지연 증가"]
components:
  - id: relational-database
    label: {en: "Relational database", ko: "관계형 DB"}
    phrases:
      en: ["postgres", "mysql"]
      ko: ["디비"]
`))
	if err != nil {
		t.Fatal(err)
	}
	return tax
}

func ids(ss []matcher.Signal) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.ID)
	}
	slices.Sort(out)
	return out
}

func TestExtract(t *testing.T) {
	ext := matcher.NewExtractor(smallTaxonomy(t))
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"english stems", "the certificate had expired on api.internal", []string{"tls-handshake-failures"}},
		{"gap of two words", "the billing certificate has now expired", []string{"tls-handshake-failures"}},
		{"too far apart", "certificate rotation went fine, nothing else has changed and nothing expired", nil},
		{"prefix", "SSL handshake failures from the edge", []string{"tls-handshake-failures"}},
		{"camel case identifier", "[FIRING:1] KubePodCrashLooping payments", []string{"crash-loop"}},
		{"identifier in a sentence", "pods in CrashLoopBackOff since 14:02", []string{"crash-loop"}},
		{"camel parts", "Kube pod crash looping again", []string{"crash-loop"}},
		{"korean particles and endings", "인증서가 만료되었습니다", []string{"tls-handshake-failures"}},
		{"korean written together", "인증서만료 알림이 왔어요", []string{"tls-handshake-failures"}},
		{"korean with english", "DB 커넥션 풀이 고갈됐어요 postgres 쪽", []string{"connection-exhaustion", "relational-database"}},
		{"korean spacing", "커넥션풀 고갈", []string{"connection-exhaustion"}},
		{"full width", "ＰＯＳＴＧＲＥＳ down", []string{"relational-database"}},
		{"nothing", "thanks all, joining the bridge now", nil},
		{"korean chatter", "감사합니다 확인했습니다", nil},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(ext.Extract(tc.text))
			if !slices.Equal(got, tc.want) {
				t.Errorf("Extract(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}

func TestExtractReportsPhrase(t *testing.T) {
	ext := matcher.NewExtractor(smallTaxonomy(t))
	got := ext.Extract("p99 latency is 4s")
	if len(got) != 1 || got[0].Phrase != "p99 latency" || got[0].Kind != cases.KindSymptom {
		t.Fatalf("got %+v", got)
	}
}

func TestDetectLang(t *testing.T) {
	for _, tc := range []struct {
		text string
		want cases.Lang
	}{
		{"p99 latency is up", cases.English},
		{"결제 API 5xx 급증했습니다", cases.Korean},
		{"[FIRING:1] KubePodCrashLooping (payments prod)\n파드가 계속 재시작되고 있습니다", cases.Korean},
		{"", cases.English},
		{"🔥🔥🔥", cases.English},
	} {
		if got := matcher.DetectLang(tc.text); got != tc.want {
			t.Errorf("DetectLang(%q) = %s, want %s", tc.text, got, tc.want)
		}
	}
}

func FuzzExtract(f *testing.F) {
	for _, s := range []string{"x509: certificate has expired", "인증서가 만료되었습니다", "KubePodCrashLooping", "\xff\xfe", strings.Repeat("가", 300), "ssl*", "*"} {
		f.Add(s)
	}
	ext := matcher.NewExtractor(smallTaxonomy(f))
	f.Fuzz(func(t *testing.T, text string) {
		for _, s := range ext.Extract(text) {
			if s.ID == "" || s.Weight <= 0 {
				t.Errorf("bad signal %+v", s)
			}
		}
		_ = matcher.DetectLang(text)
	})
}
