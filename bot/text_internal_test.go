package bot

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCutBytes checks that cutting text to a byte budget, from the front or
// the back, never splits a character and keeps as much as fits.
func FuzzCutBytes(f *testing.F) {
	f.Add("결제 API 타임아웃", 4)
	f.Add("가나다", 7)
	f.Add("abc", 2)
	f.Add("😀x", 3)
	f.Add("", 0)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || !utf8.ValidString(s) {
			return
		}
		head, tail := cutBytes(s, n), tailBytes(s, n)
		if !strings.HasPrefix(s, head) || !strings.HasSuffix(s, tail) {
			t.Fatalf("cut(%q, %d) = %q, %q: not a prefix and suffix", s, n, head, tail)
		}
		if len(head) > n || len(tail) > n {
			t.Fatalf("cut(%q, %d) = %q, %q: over the budget", s, n, head, tail)
		}
		if !utf8.ValidString(head) || !utf8.ValidString(tail) {
			t.Fatalf("cut(%q, %d) = %q, %q: split a character", s, n, head, tail)
		}
		// As much as fits: the next character would go over the budget.
		if rest := s[len(head):]; rest != "" {
			_, size := utf8.DecodeRuneInString(rest)
			if len(head)+size <= n {
				t.Fatalf("cutBytes(%q, %d) = %q: one more character fits", s, n, head)
			}
		}
		if rest := s[:len(s)-len(tail)]; rest != "" {
			_, size := utf8.DecodeLastRuneInString(rest)
			if len(tail)+size <= n {
				t.Fatalf("tailBytes(%q, %d) = %q: one more character fits", s, n, tail)
			}
		}
	})
}
