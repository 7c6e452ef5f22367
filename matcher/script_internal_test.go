package matcher

import (
	"testing"
	"unicode"
)

// TestScriptOfASCII checks scriptOf's ASCII shortcut against the Unicode
// tables it stands for.
func TestScriptOfASCII(t *testing.T) {
	for r := rune(0); r < 0x80; r++ {
		s, ok := scriptOf(r)
		want := unicode.IsLetter(r) || unicode.IsDigit(r)
		if ok != want || ok && s != latin {
			t.Errorf("scriptOf(%q) = %v, %v; want latin, %v", r, s, ok, want)
		}
	}
}
