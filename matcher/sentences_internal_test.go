package matcher

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
)

// TestSentencesValidUTF8 checks that sentences splits valid UTF-8 text as
// sentencesRunes, the rune by rune way, does.
func TestSentencesValidUTF8(t *testing.T) {
	texts := []string{
		"", " ", "a. b. c. d.", "one two three four. five six", "one two three. four five six seven; eight",
		"첫 번째 문장입니다. 두 번째 문장이 이어집니다. 세 번째\n네 번째 줄", "a b c d。e f g h。", "x.\ny z w v!\tq? r",
		"ends with a period.", "  padded  sentence  here  now.  next one  ",
		"no\u00a0break\u00a0space\u00a0words here. and\u2003em\u2003space ok now.",
		"dots...in the middle... of words. 3.14 is pi; ok ok ok ok;",
	}
	set, err := cases.Builtin(cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range set.Cases {
		for _, tx := range []cases.Text{c.Title, c.SymptomsText, c.Trigger, c.Detection, c.Summary, c.Lessons} {
			texts = append(texts, tx.En, tx.Ko)
		}
	}
	for _, m := range builtinMessages() {
		texts = append(texts, m.Text)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "bc", " ", "  ", ".", ";", "!", "?", "。", "\n", "\t", "\u00a0", "한", "다", "x1"}
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	for _, text := range texts {
		if got, want := sentences(text), sentencesRunes(text); !slices.Equal(got, want) {
			t.Fatalf("sentences(%q) = %q, want %q", text, got, want)
		}
	}
}
