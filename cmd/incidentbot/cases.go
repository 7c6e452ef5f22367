package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/incidentbot/incidentbot/cases"
)

func cmdShow(args []string, e env) error {
	fs := newFlagSet("show", "show ID [--lang en|ko] [--cases PATH]... [--builtin=true|false]", e)
	var lf libFlags
	lf.register(fs, e)
	lang := fs.String("lang", "en", "language to show the case in: en or ko")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) != 1 {
		return usagef("show takes one case id, e.g. incidentbot show cloudflare-2019-07-02")
	}
	l := cases.Lang(*lang)
	if l != cases.English && l != cases.Korean {
		return usagef("--lang must be en or ko, got %q", *lang)
	}
	lib, err := lf.load(e, e.stderr)
	if err != nil {
		return err
	}
	c, ok := lib.Get(pos[0])
	if !ok {
		return fmt.Errorf("no case %q: incidentbot cases list shows the ids", pos[0])
	}
	printCase(e.stdout, cases.DefaultTaxonomy(), c, l)
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
	if c.Impact.Scope != "" || c.Impact.Users != "" || c.Impact.Region != "" {
		fmt.Fprintf(w, "\n%s: %s", t["impact"], strings.Join(nonEmpty(c.Impact.Scope, c.Impact.Users, c.Impact.Region), " · "))
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

func cmdCases(args []string, e env) error {
	if len(args) == 0 {
		return usagef("cases needs a subcommand: validate, list, stats or relate")
	}
	switch args[0] {
	case "validate":
		return casesValidate(args[1:], e)
	case "list":
		return casesList(args[1:], e)
	case "stats":
		return casesStats(args[1:], e)
	case "relate":
		return casesRelate(args[1:], e)
	}
	return usagef("unknown cases subcommand %q: use validate, list, stats or relate", args[0])
}

// errInvalid reports that validation found errors (already printed).
var errInvalid = fmt.Errorf("validation found errors")

func casesValidate(args []string, e env) error {
	fs := newFlagSet("cases validate", "cases validate [PATH...]  (no PATH: the built-in library)", e)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(err)
	}
	tax := cases.DefaultTaxonomy()
	var sets []*cases.Set
	if len(pos) == 0 {
		b, err := cases.Builtin(tax)
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
			fmt.Fprintln(e.stdout, p.String())
			if p.Severity == cases.Error {
				nErr++
			} else {
				nWarn++
			}
		}
	}
	fmt.Fprintf(e.stdout, "%d cases loaded; %d errors, %d warnings", nCases, nErr, nWarn)
	if nSkipped > 0 {
		fmt.Fprintf(e.stdout, "; %d files skipped", nSkipped)
	}
	fmt.Fprintln(e.stdout)
	if nErr > 0 {
		return errInvalid
	}
	return nil
}

func casesList(args []string, e env) error {
	fs := newFlagSet("cases list", "cases list [--json] [--cases PATH]... [--builtin=true|false]", e)
	var lf libFlags
	lf.register(fs, e)
	asJSON := fs.Bool("json", false, "print the cases as a JSON array")
	if _, err := parseInterspersed(fs, args); err != nil {
		return flagError(err)
	}
	lib, err := lf.load(e, e.stderr)
	if err != nil {
		return err
	}
	if *asJSON {
		list := lib.Cases()
		if list == nil {
			list = []*cases.Case{}
		}
		return writeJSON(e.stdout, list)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tDATE\tORG\tTITLE")
	for _, c := range lib.Cases() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.ID, c.Date, c.Org, truncate(c.Title.In(cases.English), 90))
	}
	return tw.Flush()
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func casesStats(args []string, e env) error {
	fs := newFlagSet("cases stats", "cases stats [--cases PATH]... [--builtin=true|false]", e)
	var lf libFlags
	lf.register(fs, e)
	if _, err := parseInterspersed(fs, args); err != nil {
		return flagError(err)
	}
	lib, err := lf.load(e, e.stderr)
	if err != nil {
		return err
	}
	tax := cases.DefaultTaxonomy()
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
func casesRelate(args []string, e env) error {
	fs := newFlagSet("cases relate", "cases relate DIR  (rewrites each DIR/ID.json with up to three related cases)", e)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) != 1 {
		return usagef("cases relate takes one directory of case files, e.g. cases/builtin")
	}
	tax := cases.DefaultTaxonomy()
	set, err := cases.Load(pos[0], tax)
	if err != nil {
		return err
	}
	if n := set.Errors(); n > 0 {
		return fmt.Errorf("%d errors in %s: run incidentbot cases validate %s first", n, pos[0], pos[0])
	}
	lib, _ := cases.NewLibrary(set)
	related := cases.Relate(lib, tax)
	changed := 0
	for _, c := range lib.Cases() {
		file := set.Files[c.ID]
		if filepath.Ext(file) != ".json" || filepath.Base(file) != c.ID+".json" {
			return fmt.Errorf("%s: cases relate rewrites one-case files named ID.json; this one holds %s", file, c.ID)
		}
		c.Related = related[c.ID]
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return fmt.Errorf("encode %s: %w", c.ID, err)
		}
		old, _ := os.ReadFile(file)
		if bytes.Equal(old, buf.Bytes()) {
			continue
		}
		if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
			return err
		}
		changed++
	}
	fmt.Fprintf(e.stdout, "%d cases, %d files rewritten\n", lib.Len(), changed)
	return nil
}
