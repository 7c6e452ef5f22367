package matcher

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"hash/fnv"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// How far votes move a case. A case's score is multiplied by
// (1 + HelpfulStep*h) / (1 + NotRelevantStep*n), h and n its helpful and
// not-relevant votes for similar texts, each counted up to VoteCap: at most
// ×1.75 up and ×0.18 down. One not-relevant vote (×0.4) takes the best
// case below every case shown beside it that scores more than 0.4 of it
// (those shown score at least Keep of the best, 0.3), two (×0.25) below
// nearly all; a case that did not match is never brought in.
const (
	VoteCap         = 3
	HelpfulStep     = 0.25
	NotRelevantStep = 1.5
)

// boostsByCase sums boosts by case, or returns nil when there are none.
func boostsByCase(bs []Boost) map[string]Boost {
	if len(bs) == 0 {
		return nil
	}
	m := make(map[string]Boost, len(bs))
	for _, b := range bs {
		if b.CaseID == "" || b.Helpful <= 0 && b.NotRelevant <= 0 {
			continue
		}
		s := m[b.CaseID]
		s.CaseID = b.CaseID
		s.Helpful += max(b.Helpful, 0)
		s.NotRelevant += max(b.NotRelevant, 0)
		m[b.CaseID] = s
	}
	return m
}

// factor is how much a case's votes multiply its score.
func (b Boost) factor() float64 {
	h, n := min(b.Helpful, VoteCap), min(b.NotRelevant, VoteCap)
	return (1 + HelpfulStep*float64(h)) / (1 + NotRelevantStep*float64(n))
}

// steer reorders cases that matched (cands, with scores, best first) by
// their votes. A case a vote took below floor is left out. It returns the
// new order, scores and the votes that moved each case.
func steer(cands []Parts, scores []float64, boosts map[string]Boost, floor float64) ([]Parts, []float64, []Boost) {
	type voted struct {
		p     Parts
		s     float64
		votes Boost
	}
	all := make([]voted, 0, len(cands))
	for i, p := range cands {
		v := voted{p: p, s: scores[i]}
		if b, ok := boosts[p.Case.ID]; ok {
			v.s *= b.factor()
			v.votes = b
			if v.s < floor {
				continue
			}
		}
		all = append(all, v)
	}
	slices.SortStableFunc(all, func(a, b voted) int { return cmp.Compare(b.s, a.s) })
	outP, outS, outV := make([]Parts, len(all)), make([]float64, len(all)), make([]Boost, len(all))
	for i, v := range all {
		outP[i], outS[i], outV[i] = v.p, v.s, v.votes
	}
	return outP, outS, outV
}

// Signature is what tells whether two texts are about the same thing, for
// votes: the alert's fingerprint and the text's analysed terms.
type Signature struct {
	// Fingerprint is Fingerprint(text).
	Fingerprint string
	terms       []uint64 // hashes of the analysed terms, sorted, unique
}

// SimilarThreshold is the Jaccard similarity of two texts' analysed terms
// from which they count as similar, chosen on the table in votes_test.go.
// The same problem told in other words around the same names scores 0.69
// to 0.86 there, in English and Korean; an alert template firing for
// another service scores 0.47 (its name, labels and boilerplate are
// shared), and different problems 0.12 and less. The same alert again with
// other numbers, hosts and pods scores 0.45 to 0.5 but is found by its
// fingerprint, so terms need not reach that low.
const SimilarThreshold = 0.6

// minSimilarTerms is how many terms each text needs before its terms alone
// can make it similar to another: with fewer, one shared word would do.
const minSimilarTerms = 3

// SignatureOf reads a text's signature.
func SignatureOf(text string) Signature {
	order, _ := queryTerms(text)
	// Hashes compare faster than strings, and a reply compares its text
	// with every voted text; two terms sharing a 64-bit hash are rare
	// enough not to matter to a similarity.
	hs := make([]uint64, len(order))
	for i, t := range order {
		h := fnv.New64a()
		h.Write([]byte(t))
		hs[i] = h.Sum64()
	}
	slices.Sort(hs)
	return Signature{Fingerprint: Fingerprint(text), terms: slices.Compact(hs)}
}

// Similarity is the Jaccard similarity of the two texts' analysed terms (0
// to 1).
func (s Signature) Similarity(o Signature) float64 {
	if len(s.terms) == 0 || len(o.terms) == 0 {
		return 0
	}
	shared, i, j := 0, 0, 0
	for i < len(s.terms) && j < len(o.terms) {
		switch a, b := s.terms[i], o.terms[j]; {
		case a == b:
			shared++
			i++
			j++
		case a < b:
			i++
		default:
			j++
		}
	}
	return float64(shared) / float64(len(s.terms)+len(o.terms)-shared)
}

// Similar reports whether a vote cast on one text speaks for the other:
// the same alert fingerprint, or terms at least SimilarThreshold alike.
func (s Signature) Similar(o Signature) bool {
	if s.Fingerprint != "" && s.Fingerprint == o.Fingerprint {
		return true
	}
	if len(s.terms) < minSimilarTerms || len(o.terms) < minSimilarTerms {
		return false
	}
	return s.Similarity(o) >= SimilarThreshold
}

var (
	// alertState is the state and count alert tools put before the name:
	// [FIRING:3], [RESOLVED], [Alerting], [OK].
	alertState = regexp.MustCompile(`(?i)\[\s*(firing|resolved|alerting|ok|no ?data|triggered|recovered|warn|warning|critical)\s*(:\s*\d+)?\s*\]`)
	// slackMarkup is a mention, channel or link in Slack's markup.
	slackMarkup = regexp.MustCompile(`<[^>]*>`)
	// hostLike are host names with two dots or more, IPv4 addresses and
	// e-mail addresses: they tell where an alert fired, not what it is.
	hostLike = regexp.MustCompile(`(?i)[a-z0-9_-]+(\.[a-z0-9_-]+){2,}(:\d+)?|\d{1,3}(\.\d{1,3}){3}(:\d+)?|\S+@\S+`)
)

// minFingerprint is how many letters a fingerprint needs: "help" or "down"
// alone is not one alert.
const minFingerprint = 8

// Fingerprint identifies an alert across its firings: its first line (the
// name and labels alert tools put there), normalised as the matcher
// normalises text, without its state and count, mentions and links, host
// names and addresses, or any word with a digit in it (counts, ids, pod
// suffixes, times and dates). It is "" for a text with too little left.
func Fingerprint(text string) string {
	text = normalize(text)
	var line string
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			line = l
			break
		}
	}
	line = alertState.ReplaceAllString(line, " ")
	line = slackMarkup.ReplaceAllString(line, " ")
	line = hostLike.ReplaceAllString(line, " ")
	var kept []string
	letters := 0
	for _, w := range splitWords(line) {
		if strings.IndexFunc(w.text, unicode.IsDigit) >= 0 || w.script == latin && looksLikeHex(w.text) {
			continue
		}
		kept = append(kept, w.text)
		n := len([]rune(w.text))
		if w.script != latin {
			n *= 3 // a syllable says about as much as three letters
		}
		letters += n
	}
	if letters < minFingerprint {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.Join(kept, " ")))
	return hex.EncodeToString(sum[:8])
}

// looksLikeHex reports a long word of hexadecimal letters only, a hash
// written without digits.
func looksLikeHex(w string) bool {
	if len(w) < 8 {
		return false
	}
	for _, r := range w {
		if !strings.ContainsRune("abcdef", r) {
			return false
		}
	}
	return true
}
