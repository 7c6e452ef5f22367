package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/store"
)

// maxInput bounds text read from standard input for one match.
const maxInput = 8 << 20

// matchCmd is "incidentbot match".
type matchCmd struct {
	libFlags
	Top   int      `name:"top" default:"3" help:"Return at most N cases (1 to 100)." placeholder:"N"`
	JSON  bool     `name:"json" help:"Print one JSON object."`
	Batch bool     `name:"batch" help:"Read JSON lines {\"id\": ..., \"text\": ...} from standard input and print one JSON object per line."`
	Text  []string `arg:"" optional:"" help:"The alert or message text; joined with spaces. None: read standard input."`
	dbFlags
	Team string `name:"team" placeholder:"ID" help:"With --db: let the votes of this Slack workspace (T…) in the store steer the ranking as they do in Slack; the bot logs its id at start as team_id. Without it votes play no part."`
}

func (c *matchCmd) Run(ctx context.Context, e env, o *origin) error {
	if err := o.inRange("top", c.Top, 1, 100); err != nil {
		return err
	}
	if c.Batch && len(c.Text) > 0 {
		return usagef("--batch reads queries from standard input: give no TEXT")
	}
	if c.Team != "" && c.DB == "" {
		return usagef("--team goes with --db: the votes of one workspace in one store steer the ranking")
	}
	if err := c.dbFlags.check(); err != nil {
		return err
	}
	var text string
	if !c.Batch {
		if len(c.Text) > 0 {
			text = strings.Join(c.Text, " ")
		} else {
			data, err := io.ReadAll(io.LimitReader(ctxReader{ctx, e.stdin}, maxInput+1))
			if err != nil {
				return fmt.Errorf("read standard input: %w", err)
			}
			if len(data) > maxInput {
				return usagef("standard input is larger than %d MiB: pass the alert text, not a whole log", maxInput>>20)
			}
			text = string(data)
		}
		if strings.TrimSpace(text) == "" {
			return usagef("no text to match: give TEXT or pipe it on standard input")
		}
	}

	// Votes and team cases come from --db only, never from the store
	// in the environment.
	var (
		st    store.Store
		votes voteSet
	)
	if c.DB != "" {
		var err error
		if st, err = openDB(ctx, c.DB); err != nil {
			return err
		}
		defer st.Close()
		if c.Team != "" {
			if votes, err = readVotes(ctx, st, c.Team, c.Channel); err != nil {
				return err
			}
		}
	}
	var ts teamStore
	if st != nil {
		ts = st
	}
	lib, only, err := libraryWithTeam(ctx, &c.libFlags, ts, e.stderr)
	if err != nil {
		return err
	}
	steer := func(text string) matcher.MatchOptions {
		// Cases kept to a private channel are found only for --channel,
		// as the bot finds them only there.
		return matcher.MatchOptions{Channel: c.Channel, Boosts: votes.boosts(text)}
	}
	m, err := newMatcher(lib, matcher.Options{Taxonomy: c.tax(), Only: only})
	if err != nil {
		return err
	}
	defer m.Close()

	if c.Batch {
		return matchBatch(ctx, m, c.Top, steer, e)
	}
	ans, err := m.MatchWith(ctx, text, c.Top, steer(text))
	if err != nil {
		return err
	}
	if c.JSON {
		return writeJSON(e.stdout, ans.View())
	}
	printAnswer(termWriter{e.stdout}, m.Taxonomy(), ans)
	return nil
}

// batchLine is one line of --batch output: the match --json object with
// the line's id and, when the line could not be answered, the reason.
type batchLine struct {
	ID json.RawMessage `json:"id,omitempty"`
	matcher.View
	Error string `json:"error,omitempty"`
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// errBatch reports that some batch lines failed; each was answered with an
// error object.
var errBatch = errors.New("some lines of the batch could not be read; see their \"error\" fields")

func matchBatch(ctx context.Context, m *matcher.Matcher, top int, steer func(string) matcher.MatchOptions, e env) error {
	r := bufio.NewReaderSize(ctxReader{ctx, e.stdin}, 64<<10)
	failed := false
	for n := 1; ; n++ {
		l, err := readLine(r)
		if l.present {
			out := batchLine{View: matcher.EmptyView()}
			switch {
			case l.over:
				out.ID = batchID(l.head, l.tail)
				out.Error = fmt.Sprintf("line %d: longer than %d MiB: send the alert text, not a whole log", n, maxInput>>20)
			case len(bytes.TrimSpace(l.head)) == 0:
				out.Error = fmt.Sprintf("line %d: empty line (every input line gets one output line)", n)
			default:
				var q struct {
					ID   json.RawMessage `json:"id"`
					Text *string         `json:"text"`
				}
				switch jerr := json.Unmarshal(l.head, &q); {
				case jerr != nil:
					out.Error = fmt.Sprintf("line %d: not a JSON object {\"id\": ..., \"text\": ...}: %v", n, jerr)
				case q.Text == nil:
					out.ID, out.Error = q.ID, fmt.Sprintf("line %d: no \"text\" field", n)
				default:
					out.ID = q.ID
					if ans, merr := m.MatchWith(ctx, *q.Text, top, steer(*q.Text)); merr != nil {
						out.Error = fmt.Sprintf("line %d: %v", n, merr)
					} else {
						out.View = ans.View()
					}
				}
			}
			if out.Error != "" {
				failed = true
			}
			if werr := writeJSON(e.stdout, out); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read standard input: %w", err)
		}
	}
	if failed {
		return errBatch
	}
	return nil
}

// tailKeep is how much of the end of an over-long batch line is kept, to
// find an "id" written after the text.
const tailKeep = 64 << 10

// inputLine is one line of a batch. A line longer than maxInput keeps only
// its first maxInput bytes (head) and its last tailKeep bytes (tail).
type inputLine struct {
	head, tail []byte
	over       bool
	present    bool // false only at the end of input with nothing read
}

// readLine reads one line of any length, in bounded memory.
func readLine(r *bufio.Reader) (inputLine, error) {
	var l inputLine
	for {
		chunk, err := r.ReadSlice('\n')
		if len(chunk) > 0 {
			l.present = true
		}
		switch {
		case !l.over && len(l.head)+len(chunk) <= maxInput:
			l.head = append(l.head, chunk...)
		default:
			if !l.over {
				l.over = true
				l.tail = append(l.tail, l.head[max(len(l.head)-tailKeep, 0):]...)
			}
			l.tail = append(l.tail, chunk...)
			if len(l.tail) > 2*tailKeep {
				l.tail = append(l.tail[:0], l.tail[len(l.tail)-tailKeep:]...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return l, err
	}
}

// batchID finds the "id" of a JSON object line too long to read whole: in
// its first part when it comes before the text, else in its last part.
func batchID(head, tail []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err == nil && t == json.Delim('{') {
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				break
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				break
			}
			if key == "id" {
				return v
			}
		}
	}
	for end := len(tail); end > 0; {
		i := bytes.LastIndex(tail[:end], []byte(`"id"`))
		if i < 0 {
			break
		}
		end = i
		before := bytes.TrimRight(tail[:i], " \t\r\n")
		if len(before) == 0 || (before[len(before)-1] != ',' && before[len(before)-1] != '{') {
			continue
		}
		rest := bytes.TrimLeft(tail[i+len(`"id"`):], " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			continue
		}
		var v json.RawMessage
		if err := json.NewDecoder(bytes.NewReader(rest[1:])).Decode(&v); err == nil {
			return v
		}
	}
	return nil
}

// words is the wording of the readable answer.
var words = map[cases.Lang]map[string]string{
	cases.English: {
		"signals":  "Signals",
		"votes_h":  "marked helpful %d× for similar alerts",
		"votes_n":  "marked not relevant %d× for similar alerts",
		"symptoms": "symptoms",
		"comps":    "components",
		"none":     "No similar case cleared the confidence floor.",
		"why":      "Why",
		"terms":    "terms",
		"helped":   "What they did",
		"lesson":   "Lesson",
		"source":   "Source",
		"nothing":  "nothing recognised",
		"cause":    "Likely cause",
		"voted":    "similar cases",
	},
	cases.Korean: {
		"signals":  "감지한 신호",
		"votes_h":  "비슷한 알림에서 도움이 됨으로 %d번 표시됨",
		"votes_n":  "비슷한 알림에서 관련 없음으로 %d번 표시됨",
		"symptoms": "증상",
		"comps":    "구성 요소",
		"none":     "신뢰도 기준을 넘는 비슷한 사례가 없습니다.",
		"why":      "매칭 이유",
		"terms":    "일치한 단어",
		"helped":   "그들이 한 조치",
		"lesson":   "교훈",
		"source":   "출처",
		"nothing":  "인식한 신호 없음",
		"cause":    "추정 원인",
		"voted":    "비슷한 사례",
	},
}

func printAnswer(w io.Writer, tax *cases.Taxonomy, ans *matcher.Answer) {
	t := words[ans.Lang]
	var sig []string
	if len(ans.Symptoms) > 0 {
		sig = append(sig, t["symptoms"]+": "+signalList(tax, cases.KindSymptom, ans.Symptoms, ans.Lang))
	}
	if len(ans.Components) > 0 {
		sig = append(sig, t["comps"]+": "+signalList(tax, cases.KindComponent, ans.Components, ans.Lang))
	}
	if len(sig) == 0 {
		sig = []string{t["nothing"]}
	}
	fmt.Fprintf(w, "%s: %s\n", t["signals"], strings.Join(sig, "; "))
	if len(ans.RootCauses) > 0 {
		rc := ans.RootCauses[0]
		fmt.Fprintf(w, "%s: %s (%s)\n", t["cause"], tax.Label(cases.KindRootCause, rc.ID, ans.Lang), quoted(rc.Evidence))
	}
	fmt.Fprintln(w)
	if len(ans.Results) == 0 {
		fmt.Fprintln(w, t["none"])
		return
	}
	for i, r := range ans.Results {
		c := r.Case
		fmt.Fprintf(w, "%d. %s\n   %s · %s · %s · score %.2f\n", i+1, c.Title.In(ans.Lang), c.Org, c.Date, c.ID, r.Score)
		var why []string
		if len(r.Symptoms) > 0 {
			why = append(why, t["symptoms"]+": "+tagList(r.Symptoms))
		}
		if len(r.Components) > 0 {
			why = append(why, t["comps"]+": "+tagList(r.Components))
		}
		if len(r.Terms) > 0 {
			why = append(why, t["terms"]+": "+strings.Join(r.Terms, ", "))
		}
		if len(why) > 0 {
			fmt.Fprintf(w, "   %s: %s\n", t["why"], strings.Join(why, "; "))
		}
		if r.Votes.Helpful > 0 {
			fmt.Fprintf(w, "   %s\n", fmt.Sprintf(t["votes_h"], r.Votes.Helpful))
		}
		if r.Votes.NotRelevant > 0 {
			fmt.Fprintf(w, "   %s\n", fmt.Sprintf(t["votes_n"], r.Votes.NotRelevant))
		}
		for _, s := range c.Remediation {
			if s.IsStated() { // what they did, never the writer's suggestion
				fmt.Fprintf(w, "   %s: %s\n", t["helped"], s.Text.In(ans.Lang))
				break
			}
		}
		if !c.Lessons.Empty() {
			fmt.Fprintf(w, "   %s: %s\n", t["lesson"], c.Lessons.In(ans.Lang))
		}
		if len(c.Sources) > 0 {
			fmt.Fprintf(w, "   %s: %s\n", t["source"], c.Sources[0].URL)
		}
		fmt.Fprintln(w)
	}
}

// signalList names each signal with the words that gave it; a symptom
// read from the text as a whole, with no word to show for it, is named
// alone, and one the nearest cases agree on says so.
func signalList(tax *cases.Taxonomy, kind cases.Kind, ss []matcher.Signal, lang cases.Lang) string {
	var parts []string
	for _, s := range ss {
		if s.Phrase == matcher.VotedPhrase {
			parts = append(parts, fmt.Sprintf("%s (%s)", tax.Label(kind, s.ID, lang), words[lang]["voted"]))
			continue
		}
		if s.Phrase == "" {
			parts = append(parts, tax.Label(kind, s.ID, lang))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s (%q)", tax.Label(kind, s.ID, lang), s.Phrase))
	}
	return strings.Join(parts, ", ")
}

func quoted(words []string) string {
	var parts []string
	for _, w := range words {
		parts = append(parts, fmt.Sprintf("%q", w))
	}
	return strings.Join(parts, ", ")
}

func tagList(ts []matcher.Tag) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, t.Label)
	}
	return strings.Join(parts, ", ")
}

// ctxReader reads from r until ctx ends: then Read returns ctx's error at
// once, even while r waits (a pipe with nothing written yet), so Ctrl-C
// stops the command. The read in progress is left behind, into a buffer of
// its own; the process ends soon after.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	type result struct {
		n   int
		err error
	}
	buf := make([]byte, len(p))
	done := make(chan result, 1)
	go func() {
		n, err := c.r.Read(buf)
		done <- result{n, err}
	}()
	select {
	case res := <-done:
		return copy(p, buf[:res.n]), res.err
	case <-c.ctx.Done():
		return 0, c.ctx.Err()
	}
}
