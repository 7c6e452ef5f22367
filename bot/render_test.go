package bot

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixtureResults are matched cases written for the golden files.
func fixtureResults() []matcher.Result {
	c1 := &cases.Case{ID: "acme-2024-03-05", Org: "Acme & Co", Date: "2024-03-05",
		Title:       cases.Text{En: "A clean-up job deleted the <payments> DNS record", Ko: "정리 작업이 결제 DNS 레코드를 지웠다"},
		Lessons:     cases.Text{En: "Deleting automation needs an allow-list.", Ko: "삭제하는 자동화에는 허용 목록이 필요하다."},
		Remediation: []cases.Step{{Text: cases.Text{En: "Restored the record from backup", Ko: "백업에서 레코드를 되살렸다"}}, {Text: cases.Text{En: "Paused the job", Ko: "작업을 멈췄다"}}, {Text: cases.Text{En: "Third step not shown"}}},
		Sources:     []cases.Source{{URL: "https://example.com/pm/acme"}}}
	c2 := &cases.Case{ID: "hanbit-2023-07-01", Org: "Hanbit", Date: "2023-07-01",
		Title:   cases.Text{En: "Connection pool exhausted after a deploy", Ko: "배포 후 커넥션 풀이 고갈됐다"},
		Lessons: cases.Text{En: "Load-test error paths.", Ko: "오류 경로도 부하 테스트해야 한다."}}
	return []matcher.Result{
		{Case: c1, Score: 0.812, Symptoms: []matcher.Tag{{ID: "dns-resolution-failures", Label: "DNS failures"}}, Components: []matcher.Tag{{ID: "dns-server", Label: "Authoritative DNS"}}, Terms: []string{"nxdomain", "payments"}},
		{Case: c2, Score: 0.456, Symptoms: []matcher.Tag{{ID: "connection-exhaustion", Label: "Connection exhaustion"}}},
	}
}

func golden(t *testing.T, name string, blocks []slack.Block, fallback string) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]any{"text": fallback, "blocks": blocks}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./bot -run Golden -update)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s changed; run go test ./bot -run Golden -update if intended:\n%s", name, buf.String())
	}
}

func TestReplyGolden(t *testing.T) {
	blocks, fallback := renderReply(fixtureResults(), cases.English, replyOptions{feedback: true, showMore: true})
	golden(t, "reply-en", blocks, fallback)
	blocks, fallback = renderReply(fixtureResults(), cases.Korean, replyOptions{feedback: true, showMore: true})
	golden(t, "reply-ko", blocks, fallback)
	blocks, fallback = renderReply(fixtureResults()[:1], cases.English, replyOptions{share: "abc123"})
	golden(t, "shortcut-en", blocks, fallback)
}

// TestReplyWithinSlackLimits renders absurd inputs and checks Slack's
// limits hold: 50 blocks, 3,000 characters of section text, button values.
func TestReplyWithinSlackLimits(t *testing.T) {
	long := strings.Repeat("긴 텍스트 & <b> ", 2000)
	var rs []matcher.Result
	for i := range 40 {
		c := &cases.Case{ID: strings.Repeat("x", 300) + string(rune('a'+i%26)), Org: long, Date: "2020",
			Title: cases.Text{En: long, Ko: long}, Lessons: cases.Text{En: long},
			Remediation: []cases.Step{{Text: cases.Text{En: long}}, {Text: cases.Text{En: long}}}}
		rs = append(rs, matcher.Result{Case: c, Score: 1, Terms: []string{long}, Symptoms: []matcher.Tag{{ID: "x", Label: long}}})
	}
	for _, lang := range []cases.Lang{cases.English, cases.Korean} {
		blocks, fallback := renderReply(rs, lang, replyOptions{feedback: true, showMore: true, share: strings.Repeat("v", 5000)})
		checkLimits(t, blocks, fallback)
	}
	blocks, fallback := renderCase(rs[0].Case, cases.DefaultTaxonomy(), cases.English)
	checkLimits(t, blocks, fallback)
}

func checkLimits(t *testing.T, blocks []slack.Block, fallback string) {
	t.Helper()
	if len(blocks) > maxBlocks {
		t.Errorf("%d blocks", len(blocks))
	}
	if utf8.RuneCountInString(fallback) > 3000 {
		t.Errorf("fallback of %d characters", utf8.RuneCountInString(fallback))
	}
	for _, b := range blocks {
		switch b := b.(type) {
		case *slack.SectionBlock:
			if n := utf8.RuneCountInString(b.Text.Text); n > maxSectionText {
				t.Errorf("section text of %d characters", n)
			}
		case *slack.ActionBlock:
			if len(b.BlockID) > 255 {
				t.Errorf("block_id of %d characters", len(b.BlockID))
			}
			for _, e := range b.Elements.ElementSet {
				if btn, ok := e.(*slack.ButtonBlockElement); ok && len(btn.Value) > maxButtonValue {
					t.Errorf("button value of %d characters", len(btn.Value))
				}
			}
		}
	}
}

func TestFullTextReadsEverywhereAlertsPutText(t *testing.T) {
	for _, name := range []string{"alertmanager", "grafana", "datadog", "pagerduty", "opsgenie"} {
		data, err := os.ReadFile("testdata/events/" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var m message
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		text := m.fullText()
		if len(text) < 80 {
			t.Errorf("%s: read only %q", name, text)
		}
		for _, noise := range []string{"https://", "dd-ack", "danger", "mrkdwn"} {
			if strings.Contains(text, noise) {
				t.Errorf("%s: text contains %q: %s", name, noise, text)
			}
		}
	}
}

func TestAlertFingerprint(t *testing.T) {
	a := alertFingerprint("[FIRING:1] KubePodCrashLooping (prod payments)\nPod payments-7d9f restarted 5 times")
	b := alertFingerprint("[FIRING:3] KubePodCrashLooping (prod payments)\nPod payments-8abc restarted 9 times")
	c := alertFingerprint("[FIRING:1] KubePodCrashLooping (prod search)")
	if a != b || a == c || a == "" {
		t.Errorf("fingerprints %q %q %q", a, b, c)
	}
}

func FuzzFullText(f *testing.F) {
	for _, name := range []string{"alertmanager", "datadog", "pagerduty"} {
		data, _ := os.ReadFile("testdata/events/" + name + ".json")
		f.Add(data)
	}
	f.Add([]byte(`{"blocks":[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]],"attachments":{"text":5}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m message
		if json.Unmarshal(data, &m) != nil {
			return
		}
		if text := m.fullText(); len(text) > maxText {
			t.Errorf("text of %d bytes", len(text))
		}
		_ = alertFingerprint(m.Text)
	})
}
