package matcher

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/incidentbot/incidentbot/cases"
)

// Signal is a tag found in a text, with the phrase that signalled it.
type Signal struct {
	Kind   cases.Kind
	ID     string
	Phrase string  // the taxonomy phrase that matched, or "similar cases" for a voted tag
	Weight float64 // how strongly the text signals the tag
}

// maxSignalWeight caps how strongly one tag can be signalled.
const maxSignalWeight = 2.0

// maxGap is how many other words may stand between two words of a phrase.
const maxGap = 2

type phraseWord struct {
	s      string
	prefix bool // matches any word that starts with s
}

type phrase struct {
	tag   *cases.Tag
	text  string
	words []phraseWord
	// joined is the phrase without spaces, for Hangul phrases that a text
	// may write as one word ("커넥션풀").
	joined string
}

// Extractor finds the symptoms, components, root causes and contributing
// factors a free text signals, from the phrases of the taxonomy. It is safe
// for concurrent use.
type Extractor struct {
	exact  map[string][]*phrase // first word -> phrases
	prefix map[string][]*phrase // first word (a prefix) -> phrases
	hangul []*phrase            // all-Hangul phrases, for the joined form
}

// NewExtractor compiles the taxonomy's phrases.
func NewExtractor(tax *cases.Taxonomy) *Extractor {
	e := &Extractor{exact: map[string][]*phrase{}, prefix: map[string][]*phrase{}}
	for _, kind := range []cases.Kind{cases.KindSymptom, cases.KindComponent, cases.KindRootCause, cases.KindContributing} {
		for _, tag := range tax.Tags(kind) {
			for _, p := range slices.Concat(tag.Phrases.En, tag.Phrases.Ko) {
				e.add(tag, p)
			}
		}
	}
	return e
}

func (e *Extractor) add(tag *cases.Tag, text string) {
	ph := &phrase{tag: tag, text: text}
	allHangul := true
	n := normalize(text)
	ws := splitWords(n)
	content := slices.ContainsFunc(ws, func(w word) bool { return w.script != latin || !phraseFiller[w.text] })
	for _, w := range ws {
		if content && w.script == latin && phraseFiller[w.text] {
			// "certificate has expired" also matches "certificate expired".
			continue
		}
		pw := phraseWord{s: w.stem}
		switch {
		case w.script != latin:
			pw = phraseWord{s: w.text, prefix: true}
		case strings.HasPrefix(n[w.end:], "*"):
			pw = phraseWord{s: w.text, prefix: true}
			allHangul = false
		default:
			allHangul = false
		}
		ph.words = append(ph.words, pw)
	}
	if len(ph.words) == 0 {
		return
	}
	e.index(ph)
	if len(ph.words) == 2 && ph.words[0].s != ph.words[1].s {
		// Two-word phrases match in either order: "high latency" also finds
		// "latency is high", "인증서 만료" also "만료된 인증서".
		rev := &phrase{tag: ph.tag, text: ph.text, words: []phraseWord{ph.words[1], ph.words[0]}}
		e.index(rev)
	}
	if allHangul && len(ph.words) > 1 {
		for _, w := range ph.words {
			ph.joined += w.s
		}
		e.hangul = append(e.hangul, ph)
	}
}

func (e *Extractor) index(ph *phrase) {
	first := ph.words[0]
	if first.prefix {
		e.prefix[first.s] = append(e.prefix[first.s], ph)
	} else {
		e.exact[first.s] = append(e.exact[first.s], ph)
	}
}

func (pw phraseWord) matches(w *word) bool {
	if pw.prefix {
		return strings.HasPrefix(w.text, pw.s)
	}
	return w.stem == pw.s || w.text == pw.s
}

// Extract returns the tags the text signals, strongest first. Each tag is
// reported once, with the longest phrase that found it.
func (e *Extractor) Extract(text string) []Signal {
	words := splitWords(normalize(text))
	found := map[*cases.Tag]*Signal{}
	hit := func(ph *phrase) {
		weight := 1 + 0.5*float64(len(ph.words)-1)
		s := found[ph.tag]
		if s == nil {
			found[ph.tag] = &Signal{Kind: ph.tag.Kind, ID: ph.tag.ID, Phrase: ph.text, Weight: min(weight, maxSignalWeight)}
			return
		}
		// Several phrases for one tag make it surer, with diminishing
		// returns and a cap: a tag a text repeats must not drown the others.
		s.Weight = min(s.Weight+weight/2, maxSignalWeight)
		if len(ph.text) > len(s.Phrase) {
			s.Phrase = ph.text
		}
	}
	seen := map[*phrase]bool{}
	try := func(ph *phrase, i int) {
		if !seen[ph] && matchAt(ph, words, i) {
			seen[ph] = true
			hit(ph)
		}
	}
	for i := range words {
		w := &words[i]
		for _, ph := range e.exact[w.stem] {
			try(ph, i)
		}
		if w.stem != w.text {
			for _, ph := range e.exact[w.text] {
				try(ph, i)
			}
		}
		// Every prefix of the word may begin a prefix phrase.
		for n := 1; n <= len(w.text); {
			if ps, ok := e.prefix[w.text[:n]]; ok {
				for _, ph := range ps {
					try(ph, i)
				}
			}
			_, size := utf8.DecodeRuneInString(w.text[n:])
			if size == 0 {
				break
			}
			n += size
		}
	}
	if len(e.hangul) > 0 {
		var joined strings.Builder
		for _, w := range words {
			if w.script == hangul {
				joined.WriteString(w.text)
			} else {
				joined.WriteByte(' ')
			}
		}
		j := joined.String()
		for _, ph := range e.hangul {
			if !seen[ph] && strings.Contains(j, ph.joined) {
				seen[ph] = true
				hit(ph)
			}
		}
	}
	out := make([]Signal, 0, len(found))
	for _, s := range found {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Signal) int {
		if c := cmp.Compare(b.Weight, a.Weight); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// matchAt reports whether the phrase matches starting at words[i], its words
// in order with at most maxGap other words between them.
func matchAt(ph *phrase, words []word, i int) bool {
	if !ph.words[0].matches(&words[i]) {
		return false
	}
	pos := i
	for _, pw := range ph.words[1:] {
		next := -1
		for j := pos + 1; j < len(words) && j <= pos+1+maxGap; j++ {
			if pw.matches(&words[j]) {
				next = j
				break
			}
		}
		if next < 0 {
			return false
		}
		pos = next
	}
	return true
}

// phraseFiller are the words a phrase may leave out in the text: articles,
// auxiliaries and prepositions. Words that carry meaning in operations talk
// (down, out, up, no, not, can't) are not among them.
var phraseFiller = map[string]bool{"a": true, "an": true, "the": true, "is": true, "are": true, "was": true,
	"were": true, "be": true, "been": true, "being": true, "has": true, "have": true, "had": true, "of": true,
	"to": true, "for": true, "in": true, "on": true, "at": true, "by": true, "with": true, "from": true}
