package matcher

import (
	"strings"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
)

// TestMessages checks the built-in messages the trouble model learns from:
// they parse, each file holds its own language, both labels are there in
// each language, no text is there twice, and the tags of a report of
// trouble (which the tag model learns from) are taxonomy ids of the right
// kind, while talk has none.
func TestMessages(t *testing.T) {
	tax := cases.DefaultTaxonomy()
	tagged := 0
	ms, err := messages()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]map[bool]int{"en": {}, "ko": {}}
	seen := map[string]bool{}
	for i, m := range ms {
		if _, ok := count[m.Lang]; !ok {
			t.Errorf("message %d: lang %q, want en or ko", i, m.Lang)
			continue
		}
		count[m.Lang][m.Trouble]++
		key := strings.Join(strings.Fields(strings.ToLower(m.Text)), " ")
		if seen[key] {
			t.Errorf("message %d: text there twice: %q", i, m.Text)
		}
		seen[key] = true
		if m.Style == "" {
			t.Errorf("message %d: no style", i)
		}
		if !m.Trouble && len(m.Symptoms)+len(m.Components) > 0 {
			t.Errorf("message %d: talk with tags: %q", i, m.Text)
		}
		for _, kl := range []struct {
			kind cases.Kind
			ids  []string
		}{{cases.KindSymptom, m.Symptoms}, {cases.KindComponent, m.Components}} {
			for _, id := range kl.ids {
				if _, ok := tax.Lookup(kl.kind, id); !ok {
					t.Errorf("message %d: %s %q is not a taxonomy id of that kind", i, kl.kind, id)
				}
			}
		}
		if len(m.Symptoms) > 0 && len(m.Components) > 0 {
			tagged++
		}
	}
	if tagged < 900 {
		t.Errorf("%d messages carry both symptoms and components, want at least 900", tagged)
	}
	for lang, c := range count {
		if c[true] < 250 || c[false] < 250 {
			t.Errorf("%s: %d trouble and %d other messages, want at least 250 of each", lang, c[true], c[false])
		}
	}
}

// TestReadMessages checks that a malformed message file is refused with
// the line that is wrong, never read in part.
func TestReadMessages(t *testing.T) {
	good := `{"lang":"en","trouble":true,"style":"chat","text":"db is down"}` + "\n\n" +
		`{"lang":"ko","trouble":false,"style":"social","text":"감사합니다"}` + "\n"
	ms, err := readMessages([]byte(good))
	if err != nil || len(ms) != 2 || !ms[0].Trouble || ms[1].Text != "감사합니다" {
		t.Fatalf("readMessages(good) = %+v, %v", ms, err)
	}
	for name, data := range map[string]string{
		"not JSON":      `{"lang":"en","trouble":true,"style":"chat","text":"db is down"}` + "\n" + `{"lang":`,
		"unknown field": `{"lang":"en","trouble":true,"style":"chat","text":"x","label":1}`,
		"no text":       `{"lang":"en","trouble":true,"style":"chat","text":"  "}`,
		"wrong type":    `{"lang":"en","trouble":"yes","style":"chat","text":"x"}`,
	} {
		if _, err := readMessages([]byte(data)); err == nil || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: readMessages = %v, want an error naming the line", name, err)
		}
	}
}

// FuzzReadMessages checks that no input makes the message reader panic,
// and that what it accepts has text.
func FuzzReadMessages(f *testing.F) {
	f.Add([]byte(`{"lang":"en","trouble":true,"style":"chat","text":"db is down"}`))
	f.Add([]byte("{}\n{\"text\":\"\u00a0\"}"))
	f.Add([]byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := readMessages(data)
		if err != nil {
			return
		}
		for _, m := range ms {
			if strings.TrimSpace(m.Text) == "" {
				t.Fatalf("accepted a message with no text: %+v", m)
			}
		}
	})
}
