package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileCase is a case file whose text carries terminal escape codes: a
// colour change, a window title (OSC 0), a hyperlink (OSC 8), a clipboard
// write (OSC 52), a screen clear, a bell, a carriage return that hides what
// came before, and a bidirectional override.
const hostileCase = `{"id": "ansi-2024-01-01",
 "title": {"en": "Disk \u001b[31mfull\u001b[0m \u001b]0;pwned\u0007 \u001b]8;;https://evil.example\u001b\\click\u001b]8;;\u001b\\ done"},
 "summary": {"en": "The disk filled.\u001b]52;c;Y3VybCBldmlsfHNo\u0007 \u001b[2J\u0007 fake\rreal \u202eevil\u202c text"},
 "date": "2024-01-01",
 "org": "Acme \u009b31m",
 "symptoms": ["disk-full"],
 "components": ["database"],
 "remediation": [{"text": {"en": "Freed space \u001b[1A\u001b[2K"}}],
 "lessons": {"en": "Watch the disk \u001bc"},
 "sources": [{"url": "https://example.com/pm"}]}
`

// TestTerminalOutputHasNoEscapeCodes: case text printed by show, match,
// cases list and cases validate reaches the terminal without escape codes
// or control characters, and its words are still there.
func TestTerminalOutputHasNoEscapeCodes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ansi-2024-01-01.json"), []byte(hostileCase), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"show", "ansi-2024-01-01", "--cases", dir},
		{"match", "--cases", dir, "--builtin=false", "disk full on the database"},
		{"cases", "list", "--cases", dir, "--builtin=false"},
		{"cases", "validate", dir},
	} {
		code, out, errOut := runCmd(t, "", nil, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		if i := strings.IndexFunc(out, unsafeRune); i >= 0 {
			t.Errorf("%v: control character %U in output:\n%q", args, []rune(out[i:])[0], out)
		}
		if !strings.Contains(out, "Disk full") && args[0] != "cases" || args[0] == "show" && !strings.Contains(out, "Watch the disk") {
			t.Errorf("%v: case text lost:\n%q", args, out)
		}
		for _, seq := range []string{"[31m", "]0;", "]52;", "[2J", "]8;;"} {
			if strings.Contains(out, seq) {
				t.Errorf("%v: remains of an escape sequence %q:\n%q", args, seq, out)
			}
		}
	}
}

func TestTermSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\n":                          "plain\ttext\n",
		"한국어 텍스트":                                "한국어 텍스트",
		"a\x1b[1;31mred\x1b[0m":                  "ared",
		"x\x1b]0;title\x07y":                     "xy",
		"x\x1b]8;;http://e\x1b\\l\x1b]8;;\x1b\\": "xl",
		"no\x00nul\x7fdel\rcr":                   "nonuldelcr",
		"\u202eabc\u202c":                        "abc",
		"c1\u009b2Jx":                            "c1x",
		"unterminated \x1b]0;title":              "unterminated ",
	} {
		if got := termSafe(in); got != want {
			t.Errorf("termSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
