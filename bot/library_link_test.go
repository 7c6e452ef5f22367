package bot

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
)

// With a public URL, each suggested case links to its page in the
// library, in the reply's language; without one, no such link appears.
func TestReplyLinksToLibraryPage(t *testing.T) {
	for _, tc := range []struct {
		library string
		lang    cases.Lang
		want    string
	}{
		{"https://incidents.example.com/", cases.English, "<https://incidents.example.com/cases/acme-2024-03-05|in the library>"},
		{"https://incidents.example.com", cases.Korean, "<https://incidents.example.com/cases/acme-2024-03-05?lang=ko|라이브러리에서 보기>"},
		{"", cases.English, ""},
	} {
		blocks, _ := renderReply(fixtureResults()[:1], tc.lang, replyOptions{library: tc.library})
		raw, _ := json.Marshal(blocks)
		got := string(raw)
		got = strings.ReplaceAll(got, `\u003c`, "<")
		got = strings.ReplaceAll(got, `\u003e`, ">")
		got = strings.ReplaceAll(got, `\u0026`, "&")
		if tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s %s: reply lacks %s:\n%s", tc.library, tc.lang, tc.want, got)
		}
		if tc.want == "" && strings.Contains(got, "/cases/") {
			t.Errorf("no public URL, yet the reply links to a library page:\n%s", got)
		}
	}
}
