package api

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// Limits on what one request may ask for.
const (
	defaultTop   = 3 // as incidentbot match
	maxTop       = 100
	defaultLimit = 20
	maxLimit     = 100
	maxText      = 256 << 10 // longest text matched in one request
)

// Filters narrow a search or a listing. Tags are taxonomy ids.
type Filters struct {
	Symptoms     []string
	Components   []string
	RootCauses   []string
	Contributing []string
	Orgs         []string
	Since        string
}

func (f Filters) empty() bool {
	return len(f.Symptoms)+len(f.Components)+len(f.RootCauses)+len(f.Contributing)+len(f.Orgs) == 0 && f.Since == ""
}

// query writes the filters as the key:value words matcher.ParseQuery reads.
func (f Filters) query() string {
	var b strings.Builder
	add := func(key string, vs []string) {
		for _, v := range vs {
			fmt.Fprintf(&b, " %s:%q", key, v)
		}
	}
	add("symptom", f.Symptoms)
	add("component", f.Components)
	add("root_cause", f.RootCauses)
	add("contributing", f.Contributing)
	add("org", f.Orgs)
	if f.Since != "" {
		add("since", []string{f.Since})
	}
	return b.String()
}

// argError is a request the API cannot answer because of one of its
// arguments; Param names the argument.
type argError struct {
	Param string
	Msg   string
}

func (e *argError) Error() string {
	if e.Param == "" {
		return e.Msg
	}
	return e.Param + ": " + e.Msg
}

func argErrorf(param, format string, args ...any) error {
	return &argError{Param: param, Msg: fmt.Sprintf(format, args...)}
}

// notFoundError is an id the library does not hold.
type notFoundError struct {
	ID      string
	Suggest []string
}

func (e *notFoundError) Error() string {
	msg := fmt.Sprintf("no case %q", e.ID)
	if len(e.Suggest) > 0 {
		msg += "; did you mean " + strings.Join(e.Suggest, ", ") + "?"
	} else {
		msg += "; list_incidents or GET /api/v1/cases lists the ids"
	}
	return msg
}

// checkFilters rejects values that cannot be filters, naming the argument.
func checkFilters(m *matcher.Matcher, f Filters) error {
	tax := m.Taxonomy()
	check := func(param string, kind cases.Kind, ids []string) error {
		for _, id := range ids {
			if _, ok := tax.Lookup(kind, id); !ok && !carried(m.Library(), kind, id) {
				return argErrorf(param, "%q is not a %s id; vocab lists them (for example %s)", id, strings.ReplaceAll(string(kind), "_", " "), examples(tax, kind))
			}
		}
		return nil
	}
	for _, c := range []struct {
		param string
		kind  cases.Kind
		ids   []string
	}{{"symptom", cases.KindSymptom, f.Symptoms}, {"component", cases.KindComponent, f.Components},
		{"root_cause", cases.KindRootCause, f.RootCauses}, {"contributing", cases.KindContributing, f.Contributing}} {
		if err := check(c.param, c.kind, c.ids); err != nil {
			return err
		}
	}
	for _, o := range f.Orgs {
		if strings.TrimSpace(o) == "" || strings.ContainsAny(o, "\"“”") {
			return argErrorf("org", "%q is not an organisation name", o)
		}
	}
	if f.Since != "" {
		if _, err := cases.ParseDate(f.Since); err != nil {
			return argErrorf("since", "%q is not a date: write 2023, 2023-05 or 2023-05-01", f.Since)
		}
	}
	return nil
}

// carried reports whether a case of the library carries a tag the
// taxonomy does not know: a team's own tag.
func carried(lib *cases.Library, kind cases.Kind, id string) bool {
	for _, c := range lib.Cases() {
		var tags []string
		switch kind {
		case cases.KindSymptom:
			tags = c.Symptoms
		case cases.KindComponent:
			tags = c.Components
		case cases.KindRootCause:
			tags = []string{c.RootCause}
		case cases.KindContributing:
			tags = c.Contributing
		}
		if slices.Contains(tags, id) {
			return true
		}
	}
	return false
}

func examples(tax *cases.Taxonomy, kind cases.Kind) string {
	var ids []string
	for _, t := range tax.Tags(kind) {
		if len(ids) == 3 {
			break
		}
		ids = append(ids, t.ID)
	}
	return strings.Join(ids, ", ")
}

func checkLang(l string) (cases.Lang, error) {
	switch l {
	case "", "en":
		return cases.English, nil
	case "ko":
		return cases.Korean, nil
	}
	return "", argErrorf("lang", "%q is not a language: use en or ko", l)
}

func checkTop(param string, n, def, max int) (int, error) {
	if n == 0 {
		return def, nil
	}
	if n < 1 || n > max {
		return 0, argErrorf(param, "must be between 1 and %d, got %d", max, n)
	}
	return n, nil
}

func checkText(param, text string) error {
	if strings.TrimSpace(text) == "" {
		return argErrorf(param, "is empty: give the alert or message text")
	}
	if len(text) > maxText {
		return argErrorf(param, "is %d KiB; at most %d KiB is matched: send the alert, not a whole log", len(text)>>10, maxText>>10)
	}
	return nil
}

// match answers a text exactly as incidentbot match --json does.
func match(ctx context.Context, m *matcher.Matcher, text string, top int) (matcher.View, error) {
	if err := checkText("text", text); err != nil {
		return matcher.View{}, err
	}
	top, err := checkTop("top", top, defaultTop, maxTop)
	if err != nil {
		return matcher.View{}, err
	}
	ans, err := m.Match(ctx, text, top)
	if err != nil {
		return matcher.View{}, err
	}
	return ans.View(), nil
}

// search ranks cases for a lookup with optional filters. lang, when set,
// chooses the titles' language; otherwise the query's language does.
func search(ctx context.Context, m *matcher.Matcher, text string, f Filters, lang string, limit int) (matcher.View, error) {
	if strings.TrimSpace(text) == "" && f.empty() {
		return matcher.View{}, argErrorf("query", "is empty: give words to search for, or a filter")
	}
	if len(text) > maxText {
		return matcher.View{}, checkText("query", text)
	}
	if err := checkFilters(m, f); err != nil {
		return matcher.View{}, err
	}
	limit, err := checkTop("limit", limit, defaultLimit/2, maxLimit)
	if err != nil {
		return matcher.View{}, err
	}
	l, err := checkLang(lang)
	if err != nil {
		return matcher.View{}, err
	}
	ans, err := m.Search(ctx, text+f.query(), limit)
	if err != nil {
		return matcher.View{}, &argError{Param: "query", Msg: err.Error()}
	}
	if lang != "" {
		ans.Lang = l
	}
	return ans.View(), nil
}

// similar ranks the cases most like one case, by its own text.
func similar(ctx context.Context, m *matcher.Matcher, id, lang string, limit int) (matcher.View, error) {
	c, err := get(m, id)
	if err != nil {
		return matcher.View{}, err
	}
	limit, err = checkTop("limit", limit, 5, maxLimit)
	if err != nil {
		return matcher.View{}, err
	}
	l, err := checkLang(lang)
	if err != nil {
		return matcher.View{}, err
	}
	text := strings.Join([]string{c.Title.In(l), c.Summary.In(l), c.SymptomsText.In(l), c.Trigger.In(l)}, "\n")
	ans, err := m.Rank(ctx, text, limit+1)
	if err != nil {
		return matcher.View{}, err
	}
	ans.Results = slices.DeleteFunc(ans.Results, func(r matcher.Result) bool { return r.Case.ID == c.ID })
	if len(ans.Results) > limit {
		ans.Results = ans.Results[:limit]
	}
	ans.Lang = l
	return ans.View(), nil
}

func get(m *matcher.Matcher, id string) (*cases.Case, error) {
	if c, ok := m.Case(id); ok {
		return c, nil
	}
	if strings.TrimSpace(id) == "" {
		return nil, argErrorf("id", "is empty: give a case id such as %s", firstID(m.Library()))
	}
	return nil, &notFoundError{ID: id, Suggest: suggest(m.Library(), id)}
}

func firstID(lib *cases.Library) string {
	if cs := lib.Cases(); len(cs) > 0 {
		return cs[0].ID
	}
	return "an id from list_incidents"
}

// suggest names up to three ids that share the longest beginning with id:
// the same organisation, or a date typed differently.
func suggest(lib *cases.Library, id string) []string {
	id = strings.ToLower(id)
	best, out := 0, []string(nil)
	for _, c := range lib.Cases() {
		n := commonPrefix(id, c.ID)
		if n < 4 || n < best {
			continue
		}
		if n > best {
			best, out = n, nil
		}
		out = append(out, c.ID)
	}
	if len(out) > 3 {
		out = out[len(out)-3:] // ids sort by date within an org: the newest
	}
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Summary is one case in a listing.
type Summary struct {
	ID         string   `json:"id"`
	Org        string   `json:"org"`
	Date       string   `json:"date"`
	Title      string   `json:"title"`
	Symptoms   []string `json:"symptoms"`
	Components []string `json:"components"`
	RootCause  string   `json:"root_cause"`
	Score      *float64 `json:"score,omitempty"`
}

// Page is one page of a listing. NextCursor is empty on the last page.
type Page struct {
	Cases      []Summary `json:"cases"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// cursor marks where the next page of a listing starts: after a case in
// date order, or at an offset into a ranked lookup.
type cursor struct {
	Date   string `json:"d,omitempty"`
	ID     string `json:"i,omitempty"`
	Offset int    `json:"o,omitempty"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	if s == "" {
		return c, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.Offset < 0 {
		return cursor{}, argErrorf("cursor", "is not one this server gave: pass next_cursor from the previous page, or nothing for the first page")
	}
	return c, nil
}

// maxRanked bounds how deep a lookup with words can be paged.
const maxRanked = 500

// list pages through the library, newest first, narrowed by filters; with
// words in q, through the cases those words find, best first.
func list(ctx context.Context, m *matcher.Matcher, q string, f Filters, lang, cur string, limit int) (Page, error) {
	if err := checkFilters(m, f); err != nil {
		return Page{}, err
	}
	if len(q) > maxText {
		return Page{}, checkText("q", q)
	}
	limit, err := checkTop("limit", limit, defaultLimit, maxLimit)
	if err != nil {
		return Page{}, err
	}
	l, err := checkLang(lang)
	if err != nil {
		return Page{}, err
	}
	c, err := decodeCursor(cur)
	if err != nil {
		return Page{}, err
	}
	out := Page{Cases: []Summary{}}
	ranked := strings.TrimSpace(q) != ""
	if cur != "" && (ranked != (c.ID == "")) {
		return Page{}, argErrorf("cursor", "belongs to a listing with different words in q: pass q as it was for the first page, or no cursor")
	}
	if ranked {
		end := min(c.Offset+limit, maxRanked)
		ans, err := m.Search(ctx, q+f.query(), end+1)
		if err != nil {
			return Page{}, &argError{Param: "q", Msg: err.Error()}
		}
		for i := c.Offset; i < min(end, len(ans.Results)); i++ {
			s := summarize(ans.Results[i].Case, l)
			s.Score = &ans.Results[i].Score
			out.Cases = append(out.Cases, s)
		}
		if len(ans.Results) > end && end < maxRanked {
			out.NextCursor = cursor{Offset: end}.encode()
		}
		return out, nil
	}
	var all []*cases.Case
	if f.empty() {
		all = slices.Clone(m.Library().Cases())
	} else {
		ans, err := m.Search(ctx, f.query(), m.Library().Len())
		if err != nil {
			return Page{}, &argError{Msg: err.Error()}
		}
		for _, r := range ans.Results {
			all = append(all, r.Case)
		}
	}
	slices.SortFunc(all, func(a, b *cases.Case) int {
		return cmp.Or(cmp.Compare(b.Date, a.Date), cmp.Compare(a.ID, b.ID))
	})
	start := 0
	if c.ID != "" {
		start, _ = slices.BinarySearchFunc(all, c, func(x *cases.Case, c cursor) int {
			return cmp.Or(cmp.Compare(c.Date, x.Date), cmp.Compare(x.ID, c.ID))
		})
		if start < len(all) && all[start].ID == c.ID {
			start++
		}
	}
	end := min(start+limit, len(all))
	for _, cs := range all[start:end] {
		out.Cases = append(out.Cases, summarize(cs, l))
	}
	if end < len(all) {
		last := all[end-1]
		out.NextCursor = cursor{Date: last.Date, ID: last.ID}.encode()
	}
	return out, nil
}

func summarize(c *cases.Case, l cases.Lang) Summary {
	return Summary{ID: c.ID, Org: c.Org, Date: c.Date, Title: c.Title.In(l),
		Symptoms: nonNil(c.Symptoms), Components: nonNil(c.Components), RootCause: c.RootCause}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
