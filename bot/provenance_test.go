package bot

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// TestReplyQuotesOnlyStatedStepsAsWhatTheyDid: a step the case writer
// suggested must never be presented as what the organisation did.
func TestReplyQuotesOnlyStatedStepsAsWhatTheyDid(t *testing.T) {
	c := &cases.Case{ID: "acme-2025-01-02", Org: "Acme", Title: cases.Text{En: "Cache stampede"},
		Remediation: []cases.Step{
			{Text: cases.Text{En: "Add jitter to cache expiry"}, Provenance: cases.Suggested},
			{Text: cases.Text{En: "Restarted the cache tier"}, Provenance: cases.Stated},
		}}
	text := func(c *cases.Case) string {
		blocks, _ := renderReply([]matcher.Result{{Case: c, Score: 0.9}}, cases.English, replyOptions{})
		b, err := json.Marshal(blocks)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	got := text(c)
	if !strings.Contains(got, `*What they did*\n• Restarted the cache tier`) {
		t.Errorf("the stated step is not quoted as what they did:\n%s", got)
	}
	if strings.Contains(got, "jitter") {
		t.Errorf("a suggested step is quoted beside what they did:\n%s", got)
	}
	// With nothing stated, the suggestion appears under its own heading.
	c.Remediation = c.Remediation[:1]
	got = text(c)
	if strings.Contains(got, "What they did") || !strings.Contains(got, `*Suggested (not stated by them)*\n• Add jitter`) {
		t.Errorf("a case with only suggested steps:\n%s", got)
	}
	blocks, _ := renderCase(c, cases.DefaultTaxonomy(), cases.English)
	b, _ := json.Marshal(blocks)
	if strings.Contains(string(b), "What they did") || !strings.Contains(string(b), "Suggested (not stated by them)") {
		t.Errorf("/incidents show presents a suggestion as what they did:\n%s", b)
	}
}
