package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"
	"golang.org/x/text/width"

	"github.com/incidentbot/incidentbot/cases"
)

// showCmd is "incidentbot show".
type showCmd struct {
	libFlags
	dbFlags
	Lang string `name:"lang" default:"en" enum:"en,ko" help:"Language to show the case in: en or ko."`
	ID   string `arg:"" name:"id" help:"The case id, e.g. cloudflare-2019-07-02 (incidentbot cases list shows them)."`
}

func (c *showCmd) Run(ctx context.Context, e env) error {
	if err := c.dbFlags.check(); err != nil {
		return err
	}
	var ts teamStore
	if c.DB != "" {
		st, err := openDB(ctx, c.DB)
		if err != nil {
			return err
		}
		defer st.Close()
		ts = st
	}
	lib, only, err := libraryWithTeam(ctx, &c.libFlags, ts, e.stderr)
	if err != nil {
		return err
	}
	// A case kept to a private channel is shown only for --channel, as
	// the bot shows it only there; for any other it is not there, nor
	// among the ids suggested.
	lib = lib.Filter(func(cs *cases.Case) bool { return seenIn(only, cs.ID, c.Channel) })
	cs, ok := lib.Get(c.ID)
	if !ok {
		ids := make([]string, 0, lib.Len())
		for _, c := range lib.Cases() {
			ids = append(ids, c.ID)
		}
		if near := nearest(c.ID, ids, 3); len(near) > 0 {
			return fmt.Errorf("no case %q: did you mean %s? (incidentbot cases list shows the ids)", c.ID, strings.Join(near, ", "))
		}
		return fmt.Errorf("no case %q: incidentbot cases list shows the ids", c.ID)
	}
	printCase(termWriter{e.stdout}, c.tax(), cs, cases.Lang(c.Lang))
	return nil
}

var caseWords = map[cases.Lang]map[string]string{
	cases.English: {"summary": "Summary", "symptoms": "What responders saw", "tags": "Tags", "trigger": "Trigger",
		"detection": "Detection", "remediation": "What they did", "actions": "Action items", "lessons": "Lessons",
		"suggested": "suggested, not stated by them", "reconstructed": "pieced together from the write-up", "final": "final report", "preliminary": "preliminary report",
		"sources": "Sources", "impact": "Impact", "detected": "detected after", "resolved": "resolved after",
		"symptom": "symptoms", "component": "components", "root_cause": "root cause", "contributing": "contributing", "related": "Related cases"},
	cases.Korean: {"summary": "요약", "symptoms": "대응자가 본 증상", "tags": "태그", "trigger": "발단",
		"detection": "탐지", "remediation": "그들이 한 조치", "actions": "후속 조치", "lessons": "교훈",
		"suggested": "제안, 당사자가 밝힌 것 아님", "reconstructed": "보고서 내용으로 재구성", "final": "최종 보고서", "preliminary": "예비 보고서",
		"sources": "출처", "impact": "영향", "detected": "탐지까지", "resolved": "해결까지",
		"symptom": "증상", "component": "구성 요소", "root_cause": "근본 원인", "contributing": "기여 요인", "related": "관련 사례"},
}

func printCase(w io.Writer, tax *cases.Taxonomy, c *cases.Case, lang cases.Lang) {
	t := caseWords[lang]
	fmt.Fprintf(w, "%s · %s · %s\n%s\n", c.ID, c.Org, c.Date, c.Title.In(lang))
	if im := nonEmpty(c.Impact.Scope.In(lang), c.Impact.Users.In(lang), c.Impact.Region.In(lang)); len(im) > 0 {
		fmt.Fprintf(w, "\n%s: %s", t["impact"], strings.Join(im, " · "))
		var tl []string
		if d := c.Timeline.DetectedAfter; d != nil && d.Err == nil {
			tl = append(tl, t["detected"]+" "+d.String())
		}
		if d := c.Timeline.ResolvedAfter; d != nil && d.Err == nil {
			tl = append(tl, t["resolved"]+" "+d.String())
		}
		if len(tl) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(tl, ", "))
		}
		fmt.Fprintln(w)
	}
	section := func(name string, text cases.Text) {
		if !text.Empty() {
			fmt.Fprintf(w, "\n%s\n%s\n", t[name], text.In(lang))
		}
	}
	section("summary", c.Summary)
	if c.SymptomsTextKind == cases.SymptomsReconstructed && !c.SymptomsText.Empty() {
		fmt.Fprintf(w, "\n%s (%s)\n%s\n", t["symptoms"], t["reconstructed"], c.SymptomsText.In(lang))
	} else {
		section("symptoms", c.SymptomsText)
	}
	fmt.Fprintf(w, "\n%s\n", t["tags"])
	for _, k := range []struct {
		kind cases.Kind
		ids  []string
	}{{cases.KindSymptom, c.Symptoms}, {cases.KindComponent, c.Components}, {cases.KindRootCause, nonEmpty(c.RootCause)}, {cases.KindContributing, c.Contributing}} {
		if len(k.ids) == 0 {
			continue
		}
		var labels []string
		for _, id := range k.ids {
			labels = append(labels, fmt.Sprintf("%s (%s)", tax.Label(k.kind, id, lang), id))
		}
		fmt.Fprintf(w, "  %s: %s\n", t[string(k.kind)], strings.Join(labels, ", "))
	}
	section("trigger", c.Trigger)
	section("detection", c.Detection)
	steps := func(name string, ss []cases.Step) {
		if len(ss) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s\n", t[name])
		for _, s := range ss {
			if s.IsStated() {
				fmt.Fprintf(w, "  - %s\n", s.Text.In(lang))
			} else {
				fmt.Fprintf(w, "  - (%s) %s\n", t["suggested"], s.Text.In(lang))
			}
		}
	}
	steps("remediation", c.Remediation)
	steps("actions", c.ActionItems)
	section("lessons", c.Lessons)
	if len(c.Related) > 0 {
		fmt.Fprintf(w, "\n%s\n", t["related"])
		for _, r := range c.Related {
			fmt.Fprintf(w, "  - %s: %s\n", r.ID, r.Reason)
		}
	}
	if len(c.Sources) > 0 {
		fmt.Fprintf(w, "\n%s\n", t["sources"])
		for _, s := range c.Sources {
			about := nonEmpty(s.Kind, t[s.Report])
			if len(about) == 0 {
				fmt.Fprintf(w, "  - %s\n", s.URL)
			} else {
				fmt.Fprintf(w, "  - %s (%s)\n", s.URL, strings.Join(about, ", "))
			}
		}
	}
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if strings.TrimSpace(s) != "" && s != "unknown" {
			out = append(out, s)
		}
	}
	return out
}

// casesCmd is "incidentbot cases".
type casesCmd struct {
	Import   casesImportCmd   `cmd:"" help:"Turn postmortem documents (Markdown, HTML exports, Incident Library JSON) into case files."`
	Validate casesValidateCmd `cmd:"" help:"List every problem in case files; exit 1 when any is an error."`
	List     casesListCmd     `cmd:"" help:"List the cases of the library, built-in, from case files and saved by the team, with where each comes from."`
	Export   casesExportCmd   `cmd:"" help:"Write the team cases saved from Slack as case files, for review in git."`
	Stats    casesStatsCmd    `cmd:"" help:"Count cases per tag and list the taxonomy ids no case uses."`
	Relate   casesRelateCmd   `cmd:"" help:"Fill the related field of every one-case file (JSON or YAML) in DIR with up to three cases, from DIR and the built-in library."`
}

// errInvalid reports that validation found errors (already printed).
var errInvalid = fmt.Errorf("validation found errors")

// casesValidateCmd is "incidentbot cases validate".
type casesValidateCmd struct {
	taxFlags
	Paths []string `arg:"" optional:"" name:"path" help:"Case files or directories; none: the built-in library."`
}

func (c *casesValidateCmd) Run(e env) error {
	pos := c.Paths
	tax, err := c.taxonomy(e.stdout)
	if err != nil {
		return err
	}
	var sets []*cases.Set
	if len(pos) == 0 {
		b, err := builtinCases(tax)
		if err != nil {
			return err
		}
		sets = append(sets, b)
	}
	for _, p := range pos {
		s, err := cases.Load(p, tax)
		if err != nil {
			return err
		}
		sets = append(sets, s)
	}
	var nErr, nWarn, nCases, nSkipped int
	for _, s := range sets {
		nCases += len(s.Cases)
		for _, sk := range s.Skipped {
			fmt.Fprintf(e.stdout, "%s: skipped: %s\n", sk.File, sk.Reason)
			nSkipped++
		}
		for _, p := range s.Problems {
			fmt.Fprintln(termWriter{e.stdout}, p.String())
			if p.Severity == cases.Error {
				nErr++
			} else {
				nWarn++
			}
		}
	}
	fmt.Fprintf(e.stdout, "%s loaded; %s, %s", plural(nCases, "case"), plural(nErr, "error"), plural(nWarn, "warning"))
	if nSkipped > 0 {
		fmt.Fprintf(e.stdout, "; %s skipped", plural(nSkipped, "file"))
	}
	fmt.Fprintln(e.stdout)
	if nErr > 0 {
		return errInvalid
	}
	return nil
}

// casesListCmd is "incidentbot cases list".
type casesListCmd struct {
	libFlags
	storeFlags
	JSON bool `name:"json" help:"Print the cases as a JSON array."`
}

func (c *casesListCmd) Run(ctx context.Context, e env) error {
	sets, _, err := c.loadSets(ctx, e.stderr)
	if err != nil {
		return err
	}
	if _, err := mergeSets(sets, e.stderr); err != nil {
		return err
	}
	// The team cases in the activity store, when there is one.
	var tc teamCases
	st, _, ok, err := openExisting(ctx, &c.storeFlags, e, nil)
	if err != nil {
		return err
	}
	if ok {
		tc, err = readTeamCases(ctx, st, c.tax())
		st.Close()
		if err != nil {
			return err
		}
	}
	lib, _, left := withTeam(sets, tc)
	for _, why := range left {
		fmt.Fprintf(e.stderr, "incidentbot: %s\n", why)
	}
	if c.JSON {
		list := lib.Cases()
		if list == nil {
			list = []*cases.Case{}
		}
		return writeJSON(e.stdout, list)
	}
	printList(termWriter{e.stdout}, lib.Cases(), caseSources(sets, tc, lib), outputWidth(e))
	return nil
}

// caseSources says where each case of lib comes from: builtin, the file
// it was read from, or team (with the channel a private one is kept to).
func caseSources(sets []*cases.Set, tc teamCases, lib *cases.Library) map[string]string {
	out := map[string]string{}
	for _, s := range sets {
		for _, c := range s.Cases {
			if s.Name == cases.BuiltinSource {
				out[c.ID] = cases.BuiltinSource
			} else {
				out[c.ID] = s.Files[c.ID]
			}
		}
	}
	for _, c := range lib.Cases() {
		if lib.Origin(c.ID) != teamSource {
			continue
		}
		out[c.ID] = teamSource
		if ch, private := tc.only[c.ID]; private {
			out[c.ID] = teamSource + ", private: " + ch
		}
	}
	return out
}

// listWidth is the width of "cases list" when standard output is not a
// terminal (or says nothing of its size).
const listWidth = 100

// outputWidth is the terminal's width when standard output is one, else
// listWidth.
func outputWidth(e env) int {
	if f, ok := e.stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w >= 40 {
			return w
		}
	}
	return listWidth
}

// printList prints one line per case, ID, date, organisation, where it
// comes from (source) and title, each line at most width columns: the
// organisation, the source and then the title are shortened to fit.
func printList(w io.Writer, list []*cases.Case, source map[string]string, width int) {
	const gap = 2
	idW, dateW, orgW, srcW := len("ID"), len("DATE"), len("ORG"), len("SOURCE")
	for _, c := range list {
		idW, dateW = max(idW, columns(c.ID)), max(dateW, columns(c.Date))
		orgW, srcW = max(orgW, columns(c.Org)), max(srcW, columns(source[c.ID]))
	}
	// Ids are never cut (they are what users copy); a column wide enough
	// for most, and a longer id pushes its own row's title shorter.
	idW, orgW, srcW = min(idW, 32), min(orgW, 18), min(srcW, 26)
	row := func(id, date, org, src, title string) {
		line := pad(id, idW+gap) + pad(date, dateW+gap) + pad(truncate(org, orgW), orgW+gap)
		// A long id leaves less room: the source gives way before the line
		// runs over.
		sw := max(min(srcW, width-columns(line)-gap-2), 1)
		if strings.ContainsRune(src, filepath.Separator) {
			line += pad(truncateLeft(src, sw), sw+gap) // a file's name is its end
		} else {
			line += pad(truncate(src, sw), sw+gap)
		}
		line += truncate(title, max(width-columns(line), 1))
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	row("ID", "DATE", "ORG", "SOURCE", "TITLE")
	for _, c := range list {
		row(c.ID, c.Date, c.Org, source[c.ID], c.Title.In(cases.English))
	}
}

// columns is how many terminal columns s takes: two for wide (CJK)
// characters, one for others.
func columns(s string) int {
	n := 0
	for _, r := range s {
		n += runeColumns(r)
	}
	return n
}

func runeColumns(r rune) int {
	if width.LookupRune(r).Kind() == width.EastAsianWide || width.LookupRune(r).Kind() == width.EastAsianFullwidth {
		return 2
	}
	return 1
}

func pad(s string, n int) string {
	return s + strings.Repeat(" ", max(n-columns(s), 1))
}

// truncate shortens s to at most n columns, ending it with "…" when cut.
func truncate(s string, n int) string {
	if columns(s) <= n {
		return s
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		if used+runeColumns(r) > n-1 {
			break
		}
		b.WriteRune(r)
		used += runeColumns(r)
	}
	return b.String() + "…"
}

// truncateLeft shortens s to at most n columns, starting it with "…" when
// cut.
func truncateLeft(s string, n int) string {
	if columns(s) <= n {
		return s
	}
	rs := []rune(s)
	used, i := 0, len(rs)
	for i > 0 && used+runeColumns(rs[i-1]) <= n-1 {
		i--
		used += runeColumns(rs[i])
	}
	return "…" + string(rs[i:])
}

// nearest returns up to n of ids closest to the mistyped id: those within a
// few edits, and those that contain it or that it contains, best first.
func nearest(id string, ids []string, n int) []string {
	type cand struct {
		id   string
		dist int
	}
	var cs []cand
	limit := max(2, len([]rune(id))/3)
	for _, c := range ids {
		d := editDistance(strings.ToLower(id), strings.ToLower(c))
		if d > limit && len(id) >= 4 && (strings.Contains(c, id) || strings.Contains(id, c)) {
			d = limit
		}
		if d <= limit {
			cs = append(cs, cand{c, d})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.dist != b.dist {
			return cmp.Compare(a.dist, b.dist)
		}
		return cmp.Compare(a.id, b.id)
	})
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].id)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// casesStatsCmd is "incidentbot cases stats".
type casesStatsCmd struct {
	libFlags
}

func (c *casesStatsCmd) Run(e env) error {
	lib, err := c.load(e.stderr)
	if err != nil {
		return err
	}
	tax := c.tax()
	st := cases.Stats(lib, tax)
	fmt.Fprintf(e.stdout, "%d cases from %d organisations, %s to %s; %d with Korean title and summary\n\n",
		st.Cases, st.Orgs, st.FirstYear, st.LastYear, st.Korean)
	for _, kind := range []cases.Kind{cases.KindSymptom, cases.KindComponent, cases.KindRootCause, cases.KindContributing} {
		counts := st.PerTag[kind]
		fmt.Fprintf(e.stdout, "%s (%d ids)\n", kind.Field(), len(tax.Tags(kind)))
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		ids := make([]string, 0, len(counts))
		for id := range counts {
			ids = append(ids, id)
		}
		slices.SortFunc(ids, func(a, b string) int {
			if c := cmp.Compare(counts[b], counts[a]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		for _, id := range ids {
			mark := ""
			if _, ok := tax.Lookup(kind, id); !ok {
				mark = "\t(not in the taxonomy)"
			}
			fmt.Fprintf(tw, "  %s\t%d%s\n", id, counts[id], mark)
		}
		tw.Flush()
		if unused := st.Unused[kind]; len(unused) > 0 {
			fmt.Fprintf(e.stdout, "  never used: %s\n", strings.Join(unused, ", "))
		}
		fmt.Fprintln(e.stdout)
	}
	return nil
}

// casesRelate fills the related field of every case file in a directory of
// one-case JSON files, in place.
// casesRelateCmd is "incidentbot cases relate".
type casesRelateCmd struct {
	taxFlags
	Builtin bool   `name:"builtin" default:"true" negatable:"" help:"Relate the cases to the built-in library as well as to each other (--no-builtin: only to each other)."`
	Dir     string `arg:"" name:"dir" help:"A directory of one-case files (JSON or YAML), e.g. team-cases/ or cases/builtin; each is rewritten in place."`
}

func (c *casesRelateCmd) Run(e env) error {
	tax, err := c.taxonomy(e.stderr)
	if err != nil {
		return err
	}
	set, err := cases.Load(c.Dir, tax)
	if err != nil {
		return err
	}
	if n := set.Errors(); n > 0 {
		return fmt.Errorf("%s in %s: run incidentbot cases validate %s first", plural(n, "error"), c.Dir, c.Dir)
	}
	if len(set.Cases) == 0 {
		return fmt.Errorf("no cases in %s", c.Dir)
	}
	sets := []*cases.Set{set}
	if c.Builtin {
		b, err := builtinCases(tax)
		if err != nil {
			return err
		}
		// The directory's cases come last: a case there replaces the
		// built-in one with its id (as when relating cases/builtin itself).
		sets = []*cases.Set{b, set}
	}
	lib, _ := cases.NewLibrary(sets...)
	related := cases.Relate(lib, tax)
	perFile := map[string]int{}
	for _, f := range set.Files {
		perFile[f]++
	}
	changed := 0
	var refused []string
	for _, cs := range set.Cases {
		file := set.Files[cs.ID]
		if perFile[file] > 1 {
			refused = append(refused, file)
			continue
		}
		cs.Related = related[cs.ID]
		old, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var data []byte
		switch strings.ToLower(filepath.Ext(file)) {
		case ".yaml", ".yml":
			data = cases.SetRelatedYAML(old, cs.Related)
		case ".jsonl", ".ndjson":
			line, err := json.Marshal(cs)
			if err != nil {
				return fmt.Errorf("encode %s: %w", cs.ID, err)
			}
			data = append(line, '\n')
		default:
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(cs); err != nil {
				return fmt.Errorf("encode %s: %w", cs.ID, err)
			}
			data = buf.Bytes()
		}
		if bytes.Equal(old, data) {
			continue
		}
		if err := writeFileAtomic(file, data); err != nil {
			return err
		}
		changed++
	}
	fmt.Fprintf(e.stdout, "%s, %s rewritten\n", plural(len(set.Cases), "case"), plural(changed, "file"))
	if len(refused) > 0 {
		slices.Sort(refused)
		refused = slices.Compact(refused)
		return fmt.Errorf("not rewritten, as each holds several cases: %s (cases relate rewrites one-case files)", strings.Join(refused, ", "))
	}
	return nil
}
