package main

import (
	"io"
	"regexp"
	"strings"
	"unicode"
)

// escapeSeq matches terminal escape sequences: CSI (colours, cursor moves,
// "ESC [ … letter"), OSC (window titles, hyperlinks, clipboard writes,
// "ESC ] … BEL" or "ESC ] … ESC \"), and other two-character ESC codes,
// in their 7-bit and 8-bit (C1) forms.
var escapeSeq = regexp.MustCompile(`(\x1b\[|\x{9b})[0-?]*[ -/]*[@-~]|(\x1b\]|\x{9d})[^\x07\x1b\x{9c}]*(\x07|\x1b\\|\x{9c})?|\x1b[@-Z\\-_]`)

// termSafe removes from text what a terminal would act on rather than
// show: escape sequences, control characters other than newline and tab,
// and the Unicode controls that reorder or hide text (bidirectional
// overrides and isolates).
func termSafe(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	s = escapeSeq.ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		if unsafeRune(r) {
			return -1
		}
		return r
	}, s)
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case unicode.IsControl(r): // C0, DEL and C1
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e || r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// termWriter writes text for a terminal: case text printed through it
// cannot recolour, retitle or rewrite the user's terminal.
type termWriter struct{ w io.Writer }

func (t termWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, termSafe(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
