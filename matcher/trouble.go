package matcher

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"unicode"

	"github.com/incidentbot/incidentbot/cases"
)

// The trouble model tells a report of trouble ("checkout returns 502s since
// 14:05") from talk about the same systems that reports none ("upgrading
// the checkout service to 3.2 on Saturday", "can someone review my redis
// client PR"). The tag model cannot: it learns which words go with which
// tag, and the name of a component goes with that component's incidents
// whether or not anything is wrong. So the answer gate asks this model,
// apart from the tags, whether the text reads like trouble at all.
//
// It is learned from the library, like the tag model, so a team's own
// cases teach it their words. A case says both kinds of thing about the
// same systems: what went wrong and for whom (its title, symptoms text,
// how the trouble was detected, and who and what it affected), and what was
// done and planned about them (its remediation steps, action items and
// lessons). The first are reports of trouble; the
// second are engineers talking about systems, upgrades, reviews and plans,
// which is what chatter in an incident channel is. The taxonomy's symptom
// phrases and definitions are reports of trouble too; its component phrases
// and definitions are talk (naming a system is not a sign of trouble).
//
// The model is a logistic regression over its own terms (troubleTerms),
// presence only: each word and each pair of adjacent words weighs what it
// adds to the log-odds that a text reports trouble, and a term in fewer
// than troubleSupport training texts weighs nothing. A text's score is the
// sum over its terms, scaled down for a long text as the tag model's is,
// plus the bias, read as a probability by the logistic function.
//
// Cross-validated over the library's sentences (794 cases; symptoms text
// and detection as reports, before titles and impact joined them), the
// area under its ROC curve is 0.968; at 95% of talk read as talk it finds
// 0.84 of the reports. Naive Bayes over the same words alone, which came
// first, has an area of 0.951 and finds 0.74: it counts every word of a
// write-up's style as evidence on its own, where a discriminative model
// weighs the words together. Logistic over words alone has 0.962: word
// pairs ("is down", "will be") add the rest. With titles and impact among
// the reports the area is 0.969. The figures are printed by
// `go run ./matcher/cmd/fit -trouble`.
//
// A case's texts teach the model little about the talk that fills an
// incident channel: all-clear notes, planned work, deploys that went
// fine, postmortem bookkeeping. Learned from them alone, the model tells
// the built-in messages' reports from the rest with an area of 0.795
// (cross-validated over the messages' folds, 10,243 messages). So it learns
// from those messages as well (see messages), each weighing messageWeight
// sentences of a case: the area on the messages is then 0.980, and on the
// cases' sentences 0.960.
//
// The hardest talk is the kind that uses trouble's words: drills, bills,
// reviews of alert rules, questions about error codes, maintenance
// notices, resolved alerts. 1,800 of the messages (1,200 of such talk, 600
// of trouble that reads close to it) were written by four writers, each
// on other topics. Learned from three writers' messages, the model kept
// the fourth's talk silent more often in every fold (0.730 to 0.810,
// 0.783 to 0.837, 0.800 to 0.867, 0.810 to 0.847) and answered as much of
// its trouble or more. A second round of 1,800 by four more writers, on
// other topics again, did the same on a smaller scale (silence 0.032
// higher on the writer left out, answered 0.005 lower). A third round of
// 1,200 (half reports, half talk) went to what the gate missed most on
// the tuning set: notices of organisations outside tech, platform status
// updates, security and data incidents, less common monitoring tools.
// Judged on blind held-out sets it raised answered and hit@3 (README,
// "Eighty-sixth to ninety-third held-out sets").

// troubleSupport is how many training texts must contain a word before it
// weighs anything.
const troubleSupport = 3

// Labels of the trouble model's training texts, as label sets of
// learnData.trouble: a library's or the taxonomy's sentences of talk and
// reports, and the built-in messages of each label (see messages), which
// weigh messageWeight times as much.
const (
	talk          int32 = 0
	report        int32 = 1
	talkMessage   int32 = 2
	reportMessage int32 = 3
)

// reports reports whether a trouble label is a report of trouble.
func reports(label int32) bool { return label&1 == 1 }

// messageWeight is how much a built-in message weighs in training against
// one sentence of a case: the built-in library has some 28,000 sentences
// and there are 10,243 messages, but messages are what the gate reads.
// Chosen by the answer gate's cross-validated objective on the tuning set
// (fit -weights -gate-model, see README "The trouble model"): with 2,920
// messages, of 0, 1, 2, 3, 5 and 10, 3 scored best (more weight read more
// Korean reports, whose formal endings the messages' announcements share,
// as talk); with 5,443, 2, 3 and 5 score 1.938, 1.940 and 1.941, and 3 is
// kept (not measured again since).
const messageWeight = 3

// message is one built-in incident-channel message, labelled by whether it
// reports trouble.
type message struct {
	Lang    string `json:"lang"`
	Trouble bool   `json:"trouble"`
	Style   string `json:"style"`
	Text    string `json:"text"`
	// A report of trouble names the symptoms and components it
	// describes, which the tag model learns from (see gather).
	Symptoms   []string `json:"symptoms,omitempty"`
	Components []string `json:"components,omitempty"`
}

// The built-in messages: incident-channel and ops-channel messages in
// English and Korean, each labelled by whether it reports trouble. They
// were written for the model, apart from every evaluation set: alerts from
// many tools, first status updates, postmortem openings and engineers
// reporting trouble; and, naming the same systems, all-clear notes,
// announcements of planned work, deploys that went fine, review requests,
// postmortem bookkeeping, questions and small talk. A case's own texts
// have little of the second kind, which is most of what an incident
// channel says that needs no answer.
//
//go:embed trouble_en.jsonl
var messagesEn []byte

//go:embed trouble_ko.jsonl
var messagesKo []byte

// messages are the built-in messages, parsed once.
var messages = sync.OnceValues(func() ([]message, error) {
	var out []message
	for _, f := range []struct {
		name string
		data []byte
	}{{"trouble_en.jsonl", messagesEn}, {"trouble_ko.jsonl", messagesKo}} {
		ms, err := readMessages(f.data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		out = append(out, ms...)
	}
	return out, nil
})

// builtinMessages are the built-in messages. They are compiled in, and
// TestMessages reads them: failing to, it panics.
func builtinMessages() []message {
	ms, err := messages()
	if err != nil {
		panic("matcher: built-in messages: " + err.Error())
	}
	return ms
}

// readMessages reads messages in JSON lines; every line must hold a
// message with text.
func readMessages(data []byte) ([]message, error) {
	var out []message
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m message
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if strings.TrimSpace(m.Text) == "" {
			return nil, fmt.Errorf("line %d: no text", n)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// gatherTrouble adds the trouble model's training texts to d, by fold:
// every sentence that reports trouble (title, symptoms text, detection,
// impact on users and scope, and the taxonomy's symptom phrases and
// definitions) and every sentence of talk
// (remediation steps, action items, lessons, and the taxonomy's component
// phrases and definitions). Its vocabulary, d.tvocab, is its own: the
// words that tell a report from a plan ("is", "will", "please", "예정",
// "부탁") are stop words the tag model leaves out.
func (d *learnData) gatherTrouble(lib *cases.Library, tax *cases.Taxonomy) {
	d.stems = stemMemo{}
	d.troubleStart(tax, false)
	for _, c := range lib.Cases() {
		d.troubleCase(c, caseFold(c.ID, learnFolds), nil)
	}
	d.stems = nil
}

// troubleStart begins gatherTrouble: the taxonomy's texts and the built-in
// messages, which come before the cases'. With keep it returns the words of
// each built-in message that reports trouble, by its index in
// builtinMessages, for the tag model to share (see gatherMessages).
func (d *learnData) troubleStart(tax *cases.Taxonomy, keep bool) [][]word {
	d.tvocab = map[string]int32{}
	// In a fixed order: the model is trained in an order shuffled from
	// the order the texts were added in, so a map's order would make the
	// same library give another model on every start.
	for _, kl := range []struct {
		kind  cases.Kind
		label int32
	}{{cases.KindSymptom, report}, {cases.KindComponent, talk}} {
		kind, label := kl.kind, kl.label
		for _, t := range tax.Tags(kind) {
			for _, p := range t.Phrases.En {
				d.troublePut(nil, p, label, -1)
			}
			for _, p := range t.Phrases.Ko {
				d.troublePut(nil, p, label, -1)
			}
			d.troubleBoth(nil, cases.Text{En: t.Definition.En, Ko: t.Definition.Ko}, label, -1)
		}
	}
	msgs := builtinMessages()
	var kept [][]word
	if keep {
		kept = make([][]word, len(msgs))
	}
	for i, msg := range msgs {
		// Whole, as the gate reads a message, and held out by fold as
		// a case is.
		words := d.stems.splitWords(normalize(msg.Text))
		if keep && msg.Trouble {
			kept[i] = words
		}
		if len(d.wordTroubleFeatures(words)) == 0 {
			continue
		}
		label := talkMessage
		if msg.Trouble {
			label = reportMessage
		}
		d.trouble[caseFold(msg.Text, learnFolds)].add(label, d.tfeats)
	}
	return kept
}

// troubleCase adds a case's texts to the trouble model's, in fold fold.
// split, when not nil, holds the sentences the tag model split the case's
// texts into.
func (d *learnData) troubleCase(c *cases.Case, fold int8, split textSplits) {
	d.troubleBoth(split, c.SymptomsText, report, fold)
	d.troubleBoth(split, c.Detection, report, fold)
	// Titles and impact say what went wrong and for whom, as a status
	// update does ("a subset of customers may see errors"). With them,
	// cross-validated, the gate answers 0.929 / 0.965 / 0.940 of
	// positive queries (tuning, test and built-in library; the cases'
	// own texts) against 0.918 / 0.957 / 0.901 without, at the same
	// or higher silence (README "The trouble model").
	d.troubleBoth(split, c.Title, report, fold)
	d.troubleBoth(split, c.Impact.Users, report, fold)
	d.troubleBoth(split, c.Impact.Scope, report, fold)
	d.troubleBoth(split, c.Lessons, talk, fold)
	for _, s := range c.Remediation {
		d.troubleBoth(split, s.Text, talk, fold)
	}
	for _, s := range c.ActionItems {
		d.troubleBoth(split, s.Text, talk, fold)
	}
}

// wordTroubleFeatures sets d.tfeats to the unique ids of the trouble
// model's terms of words, as troubleFeatures gives them, adding new terms
// to the vocabulary, and returns it.
func (d *learnData) wordTroubleFeatures(words []word) []int32 {
	d.tfeats = d.tfeats[:0]
	d.tgen++
	troubleTerms(words, func(term string) {
		id, ok := d.tvocab[term]
		if !ok {
			id = int32(len(d.tvocab))
			d.tvocab[strings.Clone(term)] = id
			d.tmark = append(d.tmark, 0)
		}
		if d.tmark[id] != d.tgen {
			d.tmark[id] = d.tgen
			d.tfeats = append(d.tfeats, id)
		}
	})
	return d.tfeats
}

// troublePut adds each sentence of text with words as a training text of
// the trouble model, labelled label, in fold fold (the taxonomy's when
// below 0).
func (d *learnData) troublePut(split textSplits, text string, label int32, fold int8) {
	k := fold
	if k < 0 {
		k = learnFolds
	}
	for _, s := range split.sentences(text, d.stems) {
		if len(d.wordTroubleFeatures(s.words)) == 0 {
			continue
		}
		d.trouble[k].add(label, d.tfeats)
	}
}

// troubleBoth is troublePut of a text's English and its Korean.
func (d *learnData) troubleBoth(split textSplits, t cases.Text, label int32, fold int8) {
	d.troublePut(split, t.En, label, fold)
	d.troublePut(split, t.Ko, label, fold)
}

// troubleScore is the log-odds that a text with these features reports
// trouble. Like the tag model's scores, a long text's sum is scaled down
// to a sentence's.
func troubleScore(w []float32, feats []int32) float64 {
	var s float64
	for _, f := range feats {
		s += float64(w[f])
	}
	if len(feats) > sentenceFeatures {
		s *= math.Sqrt(sentenceFeatures / float64(len(feats)))
	}
	return s
}

// TroubleFit is the cross-validated quality of the trouble model at one
// probability: the share of held-out report sentences (symptoms text,
// detection) it reads as trouble, and of held-out talk sentences
// (remediation, action items, lessons) it does not.
type TroubleFit struct {
	P       float64 `json:"p"`
	Reports int     `json:"reports"`
	Talk    int     `json:"talk"`
	Recall  float64 `json:"recall"` // reports read as trouble
	Quiet   float64 `json:"quiet"`  // talk not read as trouble
	// The same of the built-in messages alone.
	MessageReports int     `json:"message_reports"`
	MessageTalk    int     `json:"message_talk"`
	MessageRecall  float64 `json:"message_recall"`
	MessageQuiet   float64 `json:"message_quiet"`
}

// CrossValidateTrouble measures the trouble model on the library's own
// sentences by k-fold cross-validation over its cases: each case's
// sentences are scored by a model trained without the case's fold.
// With messages, the model learns from the built-in messages as well, as
// the model in use does; without, from the library's texts alone.
func CrossValidateTrouble(lib *cases.Library, tax *cases.Taxonomy, ps []float64, messages bool) []TroubleFit {
	mw := 0.0
	if messages {
		mw = messageWeight
	}
	d := &learnData{}
	d.gatherTrouble(lib, tax)
	out := make([]TroubleFit, len(ps))
	for i, p := range ps {
		out[i].P = p
	}
	for k := range learnFolds {
		w, b := d.troubleModel(k, mw)
		d.trouble[k].each(func(label int32, feats []int32) {
			pr := sigmoid(float64(b) + troubleScore(w, feats))
			for i := range out {
				f := &out[i]
				trouble := pr >= f.P
				switch label {
				case report:
					f.Reports++
					if trouble {
						f.Recall++
					}
				case talk:
					f.Talk++
					if !trouble {
						f.Quiet++
					}
				case reportMessage:
					f.MessageReports++
					if trouble {
						f.MessageRecall++
					}
				case talkMessage:
					f.MessageTalk++
					if !trouble {
						f.MessageQuiet++
					}
				}
			}
		})
	}
	for i := range out {
		f := &out[i]
		f.Recall /= float64(max(f.Reports, 1))
		f.Quiet /= float64(max(f.Talk, 1))
		f.MessageRecall /= float64(max(f.MessageReports, 1))
		f.MessageQuiet /= float64(max(f.MessageTalk, 1))
	}
	return out
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// trouble is how likely the model finds that text reports trouble (0 to
// 1); 0.5 when the model has none.
func (m *model) trouble(text string) float64 {
	if m == nil || len(m.TroubleW) == 0 {
		return 0.5
	}
	feats := troubleFeatures(text, func(term string) (int32, bool) {
		id, ok := m.TroubleVocab[term]
		return id, ok
	}, nil, map[int32]bool{})
	return sigmoid(float64(m.TroubleB) + troubleScore(m.TroubleW, feats))
}

// troubleFeatures appends to feats the unique ids of a text's terms (see
// troubleTerms), in the order they first appear; id gives a term's id, or
// false for a term the vocabulary does not know. seen is scratch space,
// cleared first.
func troubleFeatures(text string, id func(term string) (int32, bool), feats []int32, seen map[int32]bool) []int32 {
	clear(seen)
	troubleTerms(splitWords(normalize(text)), func(term string) {
		if x, ok := id(term); ok && !seen[x] {
			seen[x] = true
			feats = append(feats, x)
		}
	})
	return feats
}

// when are words that say when, not what: a write-up dates what
// responders saw, and a plan dates what will be done.
var when = map[string]bool{
	"monday": true, "tuesday": true, "wednesday": true, "thursday": true, "friday": true, "saturday": true, "sunday": true,
	"january": true, "february": true, "march": true, "april": true, "may": true, "june": true, "july": true,
	"august": true, "september": true, "october": true, "november": true, "december": true,
	"utc": true, "pst": true, "pdt": true, "est": true, "edt": true, "kst": true, "jst": true, "am": true, "pm": true,
	"today": true, "tonight": true, "tomorrow": true, "yesterday": true,
}

// troubleTerms emits the trouble model's terms of a text: every Latin
// word's stem, stop words included, each pair of adjacent Latin stems, and
// each word's identifier parts; Hangul bigrams, whose last carries a word's
// ending.
//
// It takes the text's words (splitWords of the normalised text), which the
// tag model's training shares.
func troubleTerms(words []word, emit func(string)) {
	prev := ""
	for _, w := range words {
		switch w.script {
		case latin:
			if len(w.text) > 64 || strings.ContainsFunc(w.text, unicode.IsDigit) || when[w.text] {
				prev = ""
				continue
			}
			emit(w.stem)
			if prev != "" {
				emit(prev + " " + w.stem)
			}
			prev = w.stem
			for _, p := range w.parts {
				emit(stem(p))
			}
		default:
			prev = ""
			emitBigrams(w, func(s string, _, _ int) { emit(s) })
		}
	}
}

// The trouble model's training settings: a few epochs of stochastic
// gradient descent, in an order shuffled by a fixed seed so that the same
// library always gives the same model. Cross-validated, 2 to 8 epochs and
// a penalty of 1e-5 to 1e-3 move the area under the curve by less than
// 0.001.
const (
	troubleEpochs = 4
	troubleEta    = 0.1
	troubleLambda = 1e-3
)

// troubleModel trains the trouble model on every fold's texts but skip's:
// each term's weight and the bias. A built-in message weighs mw times a
// sentence of the library; with mw 0 the messages are left out.
func (d *learnData) troubleModel(skip int, mw float64) ([]float32, float32) {
	type unit struct {
		label int32
		feats []int32
	}
	var us []unit
	// support[f] is how many training texts contain term f.
	support := make([]int32, len(d.tvocab))
	for k := range d.trouble {
		if k == skip {
			continue
		}
		d.trouble[k].each(func(label int32, feats []int32) {
			if mw == 0 && label >= talkMessage {
				return
			}
			us = append(us, unit{label, feats})
			for _, f := range feats {
				support[f]++
			}
		})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(us), func(i, j int) { us[i], us[j] = us[j], us[i] })
	w := make([]float64, len(d.tvocab))
	var b float64
	for e := range troubleEpochs {
		eta := troubleEta / float64(1+e)
		for _, u := range us {
			scale := 1.0
			if len(u.feats) > sentenceFeatures {
				scale = math.Sqrt(sentenceFeatures / float64(len(u.feats)))
			}
			z := b
			for _, f := range u.feats {
				z += scale * w[f]
			}
			y, uw := 0.0, 1.0
			if reports(u.label) {
				y = 1
			}
			if u.label >= talkMessage {
				uw = mw
			}
			g := uw * (y - sigmoid(z))
			b += eta * g
			for _, f := range u.feats {
				if support[f] < troubleSupport {
					continue
				}
				w[f] += eta * (g*scale - troubleLambda*w[f])
			}
		}
	}
	out := make([]float32, len(w))
	for f, x := range w {
		out[f] = float32(x)
	}
	return out, float32(b)
}
