package postmortem_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/postmortem"
)

func read(t *testing.T, name string) *postmortem.Draft {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := postmortem.Read(name, data, postmortem.Auto)
	if err != nil || len(ds) != 1 {
		t.Fatalf("%s: %d drafts, %v", name, len(ds), err)
	}
	return ds[0]
}

// TestReadShapes reads one postmortem of each shape and checks that each
// heading, table, list and timeline went where a reviewer expects.
func TestReadShapes(t *testing.T) {
	for _, tc := range []struct {
		file, title, date  string
		format             postmortem.Format
		found              []string
		actions            []string // first and last action item
		remediation        int
		detected, resolved string
	}{
		{"2025-04-09-tidewater-cache-evictions.md", "Checkout slowed to a crawl when the session cache ran out of memory", "2025-04-09", postmortem.Markdown,
			[]string{"summary", "impact", "trigger", "detection", "remediation", "action_items", "lessons", "timeline"},
			[]string{"Alert when cache memory use passes 80% or evictions exceed 100/s", "Load test checkout against a cold cache each quarter"}, 1, "6m", "52m"},
		{"brightloop-notification-backlog.md", "Delayed push notifications after consumer rebalance storm", "2025-03-18", postmortem.Markdown,
			[]string{"summary", "symptoms_text", "impact", "trigger", "remediation", "action_items", "lessons"},
			[]string{"Set every Kafka consumer timeout explicitly in service config (NOTIF-311)", "Review base image changelogs for client library upgrades before rollout (PLAT-88)"}, 1, "", ""},
		{"quillstone-expired-certificate.md", "Mobile sign-in outage: expired certificate on the partner gateway", "2025-06-02", postmortem.Markdown,
			[]string{"summary", "impact", "trigger", "detection", "remediation", "action_items", "timeline"},
			[]string{"Move every certificate on the partner gateway into the certificate manager", "Add a synthetic sign-in check for the mobile API hostname"}, 2, "20m", "1h 25m"},
		{"fernhollow-wal-disk.md", "Orders database stopped accepting writes when its disk filled with WAL", "2025-01-27", postmortem.Markdown,
			[]string{"summary", "symptoms_text", "trigger", "remediation", "action_items", "front matter"},
			[]string{"Alert when any replication slot is inactive for more than 30 minutes", "Set max_slot_wal_keep_size so a stuck consumer cannot fill the disk again"}, 1, "", ""},
		{"marlow-dns-notes.txt", "Service-to-service calls inside the Marlow Robotics production cluster failed intermittently for about forty minutes on 12 February 2025", "2025-02-12", postmortem.Markdown,
			[]string{"summary", "symptoms_text", "action_items"},
			[]string{"Run NodeLocal DNSCache on every node so that lookups do not all go to CoreDNS", "Set ndots to 2 for our own services and use fully qualified names"}, 0, "", ""},
		{"nuripay-connection-pool.md", "결제 승인 API 커넥션 풀 고갈로 인한 간헐적 결제 실패", "2025-05-20", postmortem.Markdown,
			[]string{"summary", "impact", "trigger", "remediation", "action_items", "timeline"},
			[]string{"커넥션 풀 사용률 80% 초과 시 알림 추가", "커넥션 누수 탐지 옵션을 스테이징에서 상시 활성화"}, 2, "8m", "35m"},
		{"orbitline-search-heap.html", "2025-06-03 Product search outage", "2025-06-03", postmortem.HTML,
			[]string{"summary", "impact", "trigger", "detection", "remediation", "action_items", "timeline"},
			[]string{"Set circuit breaker limits below the JVM heap size", "Page on data node heap above 85% for ten minutes"}, 3, "3m", "1h 4m"},
		{"pinecrest-lb-healthcheck.html", "Patient portal outage: load balancer marked every backend unhealthy", "2025-08-14", postmortem.HTML,
			[]string{"summary", "impact", "trigger", "detection", "remediation", "action_items", "timeline"},
			[]string{"Serve both /healthz and /status from every portal version", "Block health check changes that point at a path the running version does not serve"}, 2, "2m", "31m"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			d := read(t, tc.file)
			c := d.Case
			if d.Format != tc.format {
				t.Errorf("format %s, want %s", d.Format, tc.format)
			}
			if got := c.Title.En + c.Title.Ko; got != tc.title {
				t.Errorf("title %q, want %q", got, tc.title)
			}
			if c.Date != tc.date {
				t.Errorf("date %q, want %q", c.Date, tc.date)
			}
			for _, f := range tc.found {
				if !slices.Contains(d.Found, f) {
					t.Errorf("found %v, want %s among them", d.Found, f)
				}
			}
			if len(c.ActionItems) < 2 || c.ActionItems[0].Text.En+c.ActionItems[0].Text.Ko != tc.actions[0] ||
				c.ActionItems[len(c.ActionItems)-1].Text.En+c.ActionItems[len(c.ActionItems)-1].Text.Ko != tc.actions[1] {
				t.Errorf("action items %+v, want %q ... %q", c.ActionItems, tc.actions[0], tc.actions[1])
			}
			if len(c.Remediation) != tc.remediation {
				t.Errorf("%d remediation steps, want %d: %+v", len(c.Remediation), tc.remediation, c.Remediation)
			}
			if got := durationText(c.Timeline.DetectedAfter); got != tc.detected {
				t.Errorf("detected_after %q, want %q", got, tc.detected)
			}
			if got := durationText(c.Timeline.ResolvedAfter); got != tc.resolved {
				t.Errorf("resolved_after %q, want %q", got, tc.resolved)
			}
			if c.Review.WrittenBy != "import" || len(c.Symptoms)+len(c.Components) != 0 || c.RootCause != "" {
				t.Errorf("a draft is written by import and has no tags: %+v", c)
			}
			if ps := cases.Validate(c, cases.DefaultTaxonomy()); slices.ContainsFunc(ps, func(p cases.Problem) bool { return p.Severity == cases.Error }) {
				t.Errorf("draft does not validate: %v", ps)
			}
			korean := cases.HasHangul(tc.title)
			if korean != (c.Summary.Ko != "") || korean == (c.Summary.En != "") {
				t.Errorf("summary in the wrong language: %+v", c.Summary)
			}
		})
	}
}

func durationText(d *cases.Duration) string {
	if d == nil {
		return ""
	}
	return d.String()
}

func TestFrontMatterAndServices(t *testing.T) {
	d := read(t, "fernhollow-wal-disk.md")
	if d.Case.Severity != "SEV-1" || !slices.Equal(d.Services, []string{"orders-db", "orders-api"}) {
		t.Errorf("severity %q, services %v", d.Case.Severity, d.Services)
	}
	src := "---\nid: Payments 2024/07 outage\ntitle: Card payments declined\ndate: 2024-07-02T10:00:00Z\n---\nThe card processor timed out.\n"
	ds, err := postmortem.Read("whatever.md", []byte(src), postmortem.Auto)
	if err != nil {
		t.Fatal(err)
	}
	if c := ds[0].Case; c.ID != "payments-2024-07-outage" || c.Date != "2024-07-02" || c.Title.En != "Card payments declined" {
		t.Errorf("id %q date %q title %q", c.ID, c.Date, c.Title.En)
	}
}

// TestHeadingsWhateverTheirWording maps the same document written with
// other heading words and levels, and with labels instead of headings.
func TestHeadingsWhateverTheirWording(t *testing.T) {
	src := `Incident report: Login errors after a config push

**Executive summary:** A config push broke logins for 20 minutes on 2024-11-05.

#### 3. Customer Impact
Users saw "invalid session" errors.

Why did it happen?
:

###### How we fixed it
Reverted the push.

**Follow-ups**

* Validate session config in CI
    * Add a canary stage
`
	ds, err := postmortem.Read("x.md", []byte(src), postmortem.Auto)
	if err != nil {
		t.Fatal(err)
	}
	c := ds[0].Case
	if c.Title.En != "Login errors after a config push" {
		t.Errorf("title %q", c.Title.En)
	}
	if !strings.Contains(c.Summary.En, "A config push broke logins") || c.Date != "2024-11-05" {
		t.Errorf("summary %q date %q", c.Summary.En, c.Date)
	}
	if !strings.Contains(c.Impact.Scope.En, "invalid session") {
		t.Errorf("impact %+v", c.Impact)
	}
	if len(c.Remediation) != 1 || c.Remediation[0].Text.En != "Reverted the push." {
		t.Errorf("remediation %+v", c.Remediation)
	}
	if len(c.ActionItems) != 2 || c.ActionItems[1].Text.En != "Add a canary stage" {
		t.Errorf("action items %+v", c.ActionItems)
	}
}

func TestLibraryFiles(t *testing.T) {
	data, err := os.ReadFile("testdata/kestrel-exports.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := postmortem.Read("exports.jsonl", data, postmortem.Auto)
	if err != nil || len(ds) != 2 {
		t.Fatalf("%d drafts, %v", len(ds), err)
	}
	if ds[0].Tagged || !ds[1].Tagged || ds[0].Case.Review.WrittenBy != "import" || ds[1].Case.Review.WrittenBy != "kestrel-data" {
		t.Errorf("tagged %v %v, written by %q %q", ds[0].Tagged, ds[1].Tagged, ds[0].Case.Review.WrittenBy, ds[1].Case.Review.WrittenBy)
	}
	// A JSON-lines file with another ending is still read line by line.
	ds, err = postmortem.Read("exports.txt", data, postmortem.Library)
	if err != nil || len(ds) != 2 {
		t.Errorf("as il: %d drafts, %v", len(ds), err)
	}
}

// checkDraft is what every draft, from any input, must satisfy: an id a
// file can be named by, written by import, and YAML that reads back as the
// same case.
func checkDraft(t *testing.T, d *postmortem.Draft) {
	c := d.Case
	if c.ID == "" || strings.ContainsAny(c.ID, "/ \\\n") {
		t.Errorf("bad id %q", c.ID)
	}
	data := cases.MarshalYAML(c, cases.YAMLOptions{})
	parsed, probs := cases.Parse(c.ID+".yaml", data)
	if len(probs) > 0 || len(parsed) != 1 {
		t.Fatalf("draft YAML does not parse: %v\n%s", probs, data)
	}
	for _, p := range parsed[0].Problems {
		t.Errorf("draft YAML: %s\n%s", p, data)
	}
}

func FuzzReadMarkdown(f *testing.F) {
	for _, name := range []string{"2025-04-09-tidewater-cache-evictions.md", "brightloop-notification-backlog.md", "quillstone-expired-certificate.md",
		"fernhollow-wal-disk.md", "marlow-dns-notes.txt", "nuripay-connection-pool.md"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("---\ntitle: [\n---\n# x"))
	f.Add([]byte("---\ndate: 2024-13-45\nservices: 5\n---\n## Timeline\n- 23:50 alert\n- 00:10 resolved\n"))
	f.Add([]byte("| a |\n|---|\n| [ ] |\n\n## Action items\n| # |\n|---|\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := postmortem.Read("fuzz.md", data, postmortem.Markdown)
		if err != nil {
			return
		}
		for _, d := range ds {
			checkDraft(t, d)
		}
	})
}

func FuzzReadHTML(f *testing.F) {
	for _, name := range []string{"orbitline-search-heap.html", "pinecrest-lb-healthcheck.html"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("<table><tr><th>Action</th></tr><tr><td><ul><li>x</li></ul></td></tr></table>"))
	f.Add([]byte("<p class='title'><b>T</b></p><h1>Timeline</h1><p>12:00 error</p><p>12:30 resolved</p>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := postmortem.Read("fuzz.html", data, postmortem.HTML)
		if err != nil {
			return
		}
		for _, d := range ds {
			checkDraft(t, d)
		}
	})
}

// TestTemplateLeftovers reads a postmortem written in a company template:
// a generic heading above the real title, "Title:" and "Date:" lines, and
// sections left at their placeholder.
func TestTemplateLeftovers(t *testing.T) {
	src := `# Incident Postmortem

Title: Card payments declined for EU merchants
Date: 3 March 2025

## Summary
The EU card gateway rejected valid cards for 18 minutes.

## Lessons learned
TBD

## Action items
| Action | Owner |
|---|---|
| Add a canary for the EU gateway | payments |
| N/A | |
`
	ds, err := postmortem.Read("IR-20250303.md", []byte(src), postmortem.Auto)
	if err != nil {
		t.Fatal(err)
	}
	c := ds[0].Case
	if c.Title.En != "Card payments declined for EU merchants" || c.Date != "2025-03-03" {
		t.Errorf("title %q date %q", c.Title.En, c.Date)
	}
	if !c.Lessons.Empty() || len(c.ActionItems) != 1 {
		t.Errorf("placeholders kept: lessons %q, action items %+v", c.Lessons.En, c.ActionItems)
	}
	if c.ID != "ir-20250303" {
		t.Errorf("id %q", c.ID)
	}

	// With only a generic heading, the summary's first sentence is the
	// title, and a compact date in the file name is the date.
	ds, _ = postmortem.Read("notes/20241102-outage.md", []byte("# Post-mortem\n\n## Summary\nThe search cluster lost quorum. It recovered after 20 minutes.\n"), postmortem.Auto)
	if c := ds[0].Case; c.Title.En != "The search cluster lost quorum" || c.Date != "2024-11-02" {
		t.Errorf("title %q date %q", c.Title.En, c.Date)
	}
}

// TestPlainTextSections reads a Korean plain-text report whose sections are
// marked "■ 원인" lines with bulleted lines under them, and times written
// "14시 05분".
func TestPlainTextSections(t *testing.T) {
	src := `■ 장애 개요
2024년 11월 2일 오후, 회원 로그인 API가 약 40분간 응답하지 않았다. 세션 Redis의 메모리가 가득 차면서 쓰기가 실패했다.

■ 원인
세션 TTL 설정이 누락된 배포로 키가 만료되지 않고 쌓였다.

■ 타임라인
• 14시 05분 배포
• 14시 20분 로그인 실패 증가
• 14시 28분 알림 발생
• 약 3시간 뒤 회고 일정 공유
• 15시 00분 Redis 재시작 후 정상화

■ 재발 방지 대책
• 배포 전 TTL 설정 검증
• Redis 메모리 사용률 알림 추가
`
	ds, err := postmortem.Read("login.txt", []byte(src), postmortem.Auto)
	if err != nil {
		t.Fatal(err)
	}
	c := ds[0].Case
	if !strings.HasPrefix(c.Summary.Ko, "2024년 11월 2일 오후") || c.Date != "2024-11-02" || !strings.Contains(c.Trigger.Ko, "TTL") {
		t.Errorf("summary %q date %q trigger %q", c.Summary.Ko, c.Date, c.Trigger.Ko)
	}
	if len(c.ActionItems) != 2 || c.ActionItems[1].Text.Ko != "Redis 메모리 사용률 알림 추가" {
		t.Errorf("action items %+v", c.ActionItems)
	}
	if durationText(c.Timeline.DetectedAfter) != "8m" || durationText(c.Timeline.ResolvedAfter) != "40m" {
		t.Errorf("timeline %s / %s", durationText(c.Timeline.DetectedAfter), durationText(c.Timeline.ResolvedAfter))
	}
}

// TestPlainTextTitleLine takes a short first line above the body as the
// title, and not the first line of a wrapped sentence.
func TestPlainTextTitleLine(t *testing.T) {
	src := "Ledger API outage 2025-02-03\nThe ledger API returned 503 for every request for twelve minutes after its database failed over to a replica that was still catching up.\n"
	ds, _ := postmortem.Read("ledger.txt", []byte(src), postmortem.Auto)
	if c := ds[0].Case; c.Title.En != "Ledger API outage 2025-02-03" || !strings.HasPrefix(c.Summary.En, "The ledger API returned 503") {
		t.Errorf("title %q summary %q", c.Title.En, c.Summary.En)
	}
	if d := read(t, "marlow-dns-notes.txt"); !strings.HasPrefix(d.Case.Title.En, "Service-to-service calls inside") || !strings.HasSuffix(d.Case.Title.En, "12 February 2025") {
		t.Errorf("wrapped prose taken for a title: %q", d.Case.Title.En)
	}
}
