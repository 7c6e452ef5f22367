package matcher

import (
	"strings"
	"unicode"
	"unicode/utf8"

	porterstemmer "github.com/blevesearch/go-porterstemmer"
	"github.com/incidentbot/incidentbot/cases"
	"golang.org/x/text/unicode/norm"
)

// script tells which writing system a word is in; it decides how the word is
// compared: Latin words by stem, Hangul (and other CJK) words by prefix and
// by bigrams.
type script uint8

const (
	latin  script = iota // letters and digits of alphabetic scripts
	hangul               // Korean syllables and jamo
	cjk                  // Han, Hiragana, Katakana
)

// word is one word of a text, normalised.
type word struct {
	text   string // lower case, NFKC
	stem   string // Porter stem for Latin words; text otherwise
	script script
	parts  []string // lower-case camel-case parts ("kube", "pod", ...) when there are several
	start  int      // byte offsets in the normalised text
	end    int
}

// maxAnalyzed bounds how much of a text is analysed. Alerts and chat are far
// shorter; a pasted megabyte of logs is cut here rather than slowing the bot.
const maxAnalyzed = 64 << 10

// normalize prepares text for analysis: valid UTF-8, NFKC (full-width
// letters and compatibility forms folded), bounded in size.
func normalize(text string) string {
	if len(text) > maxAnalyzed {
		text = text[:maxAnalyzed]
	}
	text = strings.ToValidUTF8(text, " ")
	return norm.NFKC.String(text)
}

func scriptOf(r rune) (script, bool) {
	// Most of a library's text is ASCII, which is Latin letters and
	// digits or neither: the Unicode tables below would say the same,
	// only slower.
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return latin, true
		}
		return 0, false
	}
	switch {
	case unicode.Is(unicode.Hangul, r):
		return hangul, true
	case unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r):
		return cjk, true
	case unicode.IsLetter(r) || unicode.IsDigit(r):
		return latin, true
	}
	return 0, false
}

// splitWords splits normalised text into words: runs of letters and digits
// of one script. Latin words are lower-cased and stemmed; words written in
// camel case also carry their parts, so "KubePodCrashLooping" is found by
// "crash loop" as well as by its whole name.
func splitWords(text string) []word {
	return stemMemo(nil).splitWords(text)
}

// stemMemo remembers the stems of the words it has split: training splits
// hundreds of thousands of words, most of them seen before, and a Porter
// stem costs more than a look-up. A nil stemMemo remembers nothing.
type stemMemo map[string]string

// stem is stem(w), remembered.
func (m stemMemo) stem(w string) string {
	if m == nil || len(w) < 4 {
		return stem(w)
	}
	if s, ok := m[w]; ok {
		return s
	}
	// The word may share the memory of a text it was split from; the
	// memo keeps a copy of its own.
	w = strings.Clone(w)
	s := stem(w)
	m[w] = s
	return s
}

// splitWords is splitWords with stems remembered in m.
func (m stemMemo) splitWords(text string) []word {
	var out []word
	start := -1
	var cur script
	flush := func(end int) {
		if start < 0 {
			return
		}
		raw := text[start:end]
		w := word{text: strings.ToLower(raw), script: cur, start: start, end: end}
		w.stem = w.text
		if cur == latin {
			w.stem = m.stem(w.text)
			w.parts = camelParts(raw)
		}
		out = append(out, w)
		start = -1
	}
	for i, r := range text {
		s, ok := scriptOf(r)
		if !ok {
			flush(i)
			continue
		}
		if start >= 0 && s != cur {
			flush(i)
		}
		if start < 0 {
			start, cur = i, s
		}
	}
	flush(len(text))
	return out
}

// stem returns the Porter stem of a lower-case Latin word. Words with digits
// (x509, 5xx, http2) and very short words are kept whole.
func stem(w string) string {
	if len(w) < 4 || strings.IndexFunc(w, unicode.IsDigit) >= 0 || !isASCII(w) {
		return w
	}
	return porterstemmer.StemString(w)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// camelParts splits an identifier written in camel case into lower-case
// parts: "KubePodCrashLooping" -> kube pod crash looping, "OOMKilled" -> oom
// killed. It returns nil for a word with fewer than two parts.
func camelParts(s string) []string {
	// A part starts at an upper-case letter after the first: most words
	// have none, and need no rune slice.
	upper := false
	for i, r := range s {
		if i > 0 && unicode.IsUpper(r) {
			upper = true
			break
		}
	}
	if !upper {
		return nil
	}
	var parts []string
	runes := []rune(s)
	begin := 0
	for i := 1; i < len(runes); i++ {
		prev, r := runes[i-1], runes[i]
		boundary := unicode.IsLower(prev) && unicode.IsUpper(r) ||
			unicode.IsUpper(prev) && unicode.IsUpper(r) && i+1 < len(runes) && unicode.IsLower(runes[i+1])
		if boundary {
			parts = append(parts, strings.ToLower(string(runes[begin:i])))
			begin = i
		}
	}
	if begin == 0 {
		return nil
	}
	return append(parts, strings.ToLower(string(runes[begin:])))
}

// stopwords are English words too common to say anything about an incident.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be been but by can could did do does for from had has have
		he her his i if in into is it its me my no not of on or our she so than that the their them then there these
		they this those to too us was we were what when where which while who will with would you your just also
		any all some been being very about after before again here out up down over under more most other such only
		own same s t don should now pm am utc kst hi hey please thanks thank ok okay`) {
		m[w] = true
	}
	return m
}()

// terms returns the index terms of a text for full-text search: stems of
// Latin words (and of their camel-case parts) without stop words, and
// overlapping bigrams of Hangul and other CJK runs, with a single syllable
// kept whole. Both languages' fields use it: English text has no Hangul, and
// Korean text keeps the English terms engineers mix into it.
func terms(text string, emit func(term string, start, end int)) {
	wordTerms(splitWords(normalize(text)), emit)
}

// wordTerms emits the index terms of words split from a text (see terms).
func wordTerms(words []word, emit func(term string, start, end int)) {
	for _, w := range words {
		switch w.script {
		case latin:
			if stopwords[w.text] || len(w.text) > 64 {
				continue
			}
			emit(w.stem, w.start, w.end)
			for _, p := range w.parts {
				if !stopwords[p] {
					emit(stem(p), w.start, w.end)
				}
			}
		default:
			emitBigrams(w, emit)
		}
	}
}

func emitBigrams(w word, emit func(string, int, int)) {
	t := w.text
	_, n := utf8.DecodeRuneInString(t)
	if n == len(t) {
		emit(t, w.start, w.end)
		return
	}
	off := w.start
	for i := 0; i+n < len(t); {
		_, m := utf8.DecodeRuneInString(t[i+n:])
		emit(t[i:i+n+m], off, off+n+m)
		off += n
		i += n
		n = m
	}
}

// DetectLang tells the language of a text: Korean when a meaningful share of
// its letters is Hangul (Korean engineers mix English terms into Korean
// sentences), English otherwise.
func DetectLang(text string) cases.Lang {
	if len(text) > maxAnalyzed {
		text = text[:maxAnalyzed]
	}
	var hangulN, letters int
	for _, r := range text {
		switch {
		case unicode.Is(unicode.Hangul, r):
			hangulN++
			letters++
		case unicode.IsLetter(r):
			letters++
		}
	}
	// A Hangul syllable carries about as much as three Latin letters, and
	// Korean alerts are mostly English labels around a Korean sentence.
	if hangulN >= 10 || hangulN > 0 && hangulN*3 >= (letters-hangulN)/3 {
		return cases.Korean
	}
	return cases.English
}
