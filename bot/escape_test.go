package bot

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/digest"
	"github.com/incidentbot/incidentbot/matcher"
)

// hostile is a case whose text tries to ping everyone, mention a user and
// add its own link, and whose source tries to replace its link's label.
func hostile(source string) *cases.Case {
	return &cases.Case{ID: "evil-2024-01-01", Org: "<!here> Org", Date: "2024-01-01",
		Title:       cases.Text{En: "Outage <!channel> <@U0ADMIN> <https://phish.example|log in here>", Ko: "장애 <!channel>"},
		Summary:     cases.Text{En: "Summary <!everyone>"},
		Lessons:     cases.Text{En: "Lesson <@U0ADMIN>"},
		Remediation: []cases.Step{{Text: cases.Text{En: "Step <!subteam^S0>"}}},
		Sources:     []cases.Source{{URL: source}}}
}

// rendered is everything a message carries, blocks and fallback text, as
// Slack would receive it.
func rendered(t *testing.T, blocks []slack.Block, fallback string) string {
	t.Helper()
	b, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := json.Unmarshal(b, new(any)); err != nil {
		t.Fatal(err)
	}
	// Undo JSON's escaping of < > & so the check sees what Slack parses.
	s = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b))
	return s + "\n" + fallback
}

// TestCaseTextCannotMentionOrLink: case text reaches Slack escaped, in the
// blocks and in the fallback text (which Slack also parses, for
// notifications), in replies, /incidents show and digests.
func TestCaseTextCannotMentionOrLink(t *testing.T) {
	c := hostile("https://example.com/pm|<!channel>click>")
	res := []matcher.Result{{Case: c, Score: 0.9}}
	d := &digest.Digest{Lang: cases.English, CaseOfWeek: c, Added: []*cases.Case{c}, AddedTotal: 1}
	for name, out := range map[string]func() ([]slack.Block, string){
		"reply":  func() ([]slack.Block, string) { return renderReply(res, cases.English, replyOptions{feedback: true}) },
		"show":   func() ([]slack.Block, string) { return renderCase(c, cases.DefaultTaxonomy(), cases.English) },
		"digest": func() ([]slack.Block, string) { return RenderDigest(d, cases.DefaultTaxonomy()) },
	} {
		blocks, fallback := out()
		all := rendered(t, blocks, fallback)
		for _, bad := range []string{"<!channel>", "<!here>", "<!everyone>", "<@U0ADMIN>", "<!subteam", "<https://phish.example", "|<!channel>click>"} {
			if strings.Contains(all, bad) {
				t.Errorf("%s: %q reaches Slack unescaped:\n%s", name, bad, all)
			}
		}
		if strings.Contains(fallback, "<") {
			t.Errorf("%s: fallback text has a raw '<': %q", name, fallback)
		}
		// The title is still linked, to the source with its '|' and '>'
		// encoded, so the label stays the case's title.
		if !strings.Contains(all, "<https://example.com/pm%7C%3C!channel%3Eclick%3E|Outage &lt;!channel&gt;") {
			t.Errorf("%s: source not linked safely:\n%s", name, all)
		}
	}
}

// TestOnlyWebLinks: a source is linked only when it is an http(s) URL
// with a host.
func TestOnlyWebLinks(t *testing.T) {
	for src, linked := range map[string]bool{
		"https://example.com/pm":          true,
		"http://example.com/pm?a=1&b=2":   true,
		"javascript:alert(1)":             false,
		"slack://open?team=T0":            false,
		"ftp://example.com/x":             false,
		"file:///etc/passwd":              false,
		"httpx://example.com":             false,
		"https:///nohost":                 false,
		"https://example.com/a b":         false,
		"mailto:oncall@example.com":       false,
		"HTTPS://EXAMPLE.COM/upper":       true,
		"https://example.com/\x1b[31mred": false,
	} {
		c := hostile(src)
		blocks, _ := renderCase(c, cases.DefaultTaxonomy(), cases.English)
		all := rendered(t, blocks, "")
		has := strings.Contains(strings.ToLower(all), "<http")
		if has != linked {
			t.Errorf("%q: linked %v, want %v\n%s", src, has, linked, all)
		}
		if linked && !strings.Contains(all, "|Outage &amp;lt;") && !strings.Contains(all, "|Outage &lt;") {
			t.Errorf("%q: label is not the escaped title:\n%s", src, all)
		}
	}
	if got := linkURL("http://example.com/?a=1&b=2"); got != "http://example.com/?a=1&amp;b=2" {
		t.Errorf("linkURL with &: %q", got)
	}
}
