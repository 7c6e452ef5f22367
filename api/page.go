package api

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

//go:embed page/*.html
var pageFiles embed.FS

var pages = map[string]*template.Template{
	"search": template.Must(template.ParseFS(pageFiles, "page/layout.html", "page/search.html")),
	"case":   template.Must(template.ParseFS(pageFiles, "page/layout.html", "page/case.html")),
}

// pageWords are the page's words in each language.
var pageWords = map[cases.Lang]map[string]string{
	cases.English: {
		"brand": "incidentbot · past incidents", "search": "Search", "placeholder": "symptoms, error text, or symptom:high-latency component:dns",
		"results": "Past incidents", "newest": "Newest cases", "library": "%d cases in the library.", "none": "No case matches these words.",
		"score": "match", "why": "Why", "hint": "Filters: symptom:ID component:ID root_cause:ID org:NAME since:2023.",
		"symptom": "symptom", "component": "component", "root_cause": "root cause", "summary": "Summary", "saw": "What responders saw",
		"trigger": "Trigger", "detection": "Detection", "helped": "What helped", "lessons": "Lessons", "actions": "Action items",
		"related": "Related cases", "sources": "Sources", "detected": "detected after", "resolved": "resolved after",
		"not_found": "No such case", "terms": "words", "more": "Older cases",
	},
	cases.Korean: {
		"brand": "incidentbot · 과거 장애 사례", "search": "검색", "placeholder": "증상, 오류 메시지 또는 symptom:high-latency component:dns",
		"results": "과거 장애 사례", "newest": "최근 사례", "library": "라이브러리에 사례 %d건이 있습니다.", "none": "이 검색어와 맞는 사례가 없습니다.",
		"score": "일치도", "why": "매칭 이유", "hint": "필터: symptom:ID component:ID root_cause:ID org:이름 since:2023",
		"symptom": "증상", "component": "구성 요소", "root_cause": "근본 원인", "summary": "요약", "saw": "대응자가 본 증상",
		"trigger": "발단", "detection": "탐지", "helped": "도움이 된 조치", "lessons": "교훈", "actions": "후속 조치",
		"related": "관련 사례", "sources": "출처", "detected": "탐지까지", "resolved": "해결까지",
		"not_found": "없는 사례입니다", "terms": "일치한 단어", "more": "이전 사례 더 보기",
	},
}

// pageData is what the templates render.
type pageData struct {
	Lang    cases.Lang
	W       map[string]string
	Title   string
	Query   string
	Switch  string // the same page in the other language
	Error   string
	Total   int
	Results []pageResult
	More    string // the next page of the listing
	Case    *CaseView
}

type pageResult struct {
	Href, Title, Org, Date, Score, Why string
}

// CaseHref links to a case's page in the page's language.
func (d *pageData) CaseHref(id string) string { return CaseURL("/", id, string(d.Lang)) }

// TagHref links to the search for cases with a tag.
func (d *pageData) TagHref(kind, id string) string {
	return "/?" + url.Values{"q": {kind + ":" + id}, "lang": {string(d.Lang)}}.Encode()
}

// Linkable reports whether a source URL may be a link: http(s) only.
func (d *pageData) Linkable(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "http" || p.Scheme == "https")
}

// pageLang picks the page's language: ?lang=, else the browser's
// preference between Korean and English.
func pageLang(r *http.Request) cases.Lang {
	switch r.URL.Query().Get("lang") {
	case "ko":
		return cases.Korean
	case "en":
		return cases.English
	}
	for _, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		tag := strings.ToLower(strings.TrimSpace(strings.SplitN(part, ";", 2)[0]))
		switch {
		case strings.HasPrefix(tag, "ko"):
			return cases.Korean
		case strings.HasPrefix(tag, "en"):
			return cases.English
		}
	}
	return cases.English
}

func other(l cases.Lang) cases.Lang {
	if l == cases.Korean {
		return cases.English
	}
	return cases.Korean
}

// switchURL is the request's URL with the other language.
func switchURL(r *http.Request, l cases.Lang) string {
	q := r.URL.Query()
	q.Set("lang", string(other(l)))
	return r.URL.Path + "?" + q.Encode()
}

func (s *Server) pageSearch(w http.ResponseWriter, r *http.Request) {
	l := pageLang(r)
	d := &pageData{Lang: l, W: pageWords[l], Query: strings.TrimSpace(r.URL.Query().Get("q")), Switch: switchURL(r, l)}
	m := s.opts.Matcher()
	d.Total = m.Library().Len()
	if d.Query == "" {
		p, err := list(r.Context(), m, "", Filters{}, string(l), r.URL.Query().Get("cursor"), defaultLimit)
		var ae *argError
		if errors.As(err, &ae) {
			d.Error = err.Error() // a cursor from an older page or a mistyped link
			p, err = list(r.Context(), m, "", Filters{}, string(l), "", defaultLimit)
		}
		if err != nil {
			s.pageError(w, r, err)
			return
		}
		if p.NextCursor != "" {
			d.More = "/?" + url.Values{"cursor": {p.NextCursor}, "lang": {string(l)}}.Encode()
		}
		for _, c := range p.Cases {
			d.Results = append(d.Results, pageResult{Href: d.CaseHref(c.ID), Title: c.Title, Org: c.Org, Date: c.Date})
		}
	} else {
		d.Title = d.Query
		q := d.Query
		if len(q) > maxText {
			q = q[:maxText]
		}
		ans, err := m.Search(r.Context(), q, defaultLimit)
		if err != nil {
			if r.Context().Err() != nil {
				return
			}
			d.Error = err.Error() // an unknown tag or a bad date, said for the reader
			ans = &matcher.Answer{}
		}
		for _, res := range ans.Results {
			c := res.Case
			pr := pageResult{Href: d.CaseHref(c.ID), Title: c.Title.In(l), Org: c.Org, Date: c.Date}
			if res.Score < 1 || len(res.Terms)+len(res.Symptoms)+len(res.Components) > 0 {
				pr.Score = fmt.Sprintf("%.0f%%", res.Score*100)
			}
			pr.Why = why(m.Taxonomy(), res, l)
			d.Results = append(d.Results, pr)
		}
	}
	s.render(w, r, http.StatusOK, "search", d)
}

func why(tax *cases.Taxonomy, r matcher.Result, l cases.Lang) string {
	var parts []string
	for _, t := range r.Symptoms {
		parts = append(parts, tax.Label(cases.KindSymptom, t.ID, l))
	}
	for _, t := range r.Components {
		parts = append(parts, tax.Label(cases.KindComponent, t.ID, l))
	}
	if len(r.Terms) > 0 {
		parts = append(parts, pageWords[l]["terms"]+" "+strings.Join(r.Terms, ", "))
	}
	return strings.Join(parts, "; ")
}

func (s *Server) pageCase(w http.ResponseWriter, r *http.Request) {
	l := pageLang(r)
	d := &pageData{Lang: l, W: pageWords[l], Switch: switchURL(r, l)}
	m := s.opts.Matcher()
	c, err := get(m, r.PathValue("id"))
	if err != nil {
		d.Title, d.Error = pageWords[l]["not_found"], err.Error()
		s.render(w, r, http.StatusNotFound, "case", d)
		return
	}
	v := viewCase(m.Library(), m.Taxonomy(), c, l, "")
	d.Case, d.Title = &v, v.Title
	s.render(w, r, http.StatusOK, "case", d)
}

func (s *Server) pageError(w http.ResponseWriter, r *http.Request, err error) {
	s.opts.Logger.Error("page failed", "path", r.URL.Path, "err", err)
	http.Error(w, "the library could not be read; the error is logged", http.StatusInternalServerError)
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, d *pageData) {
	var buf bytes.Buffer
	if err := pages[name].ExecuteTemplate(&buf, "layout", d); err != nil {
		s.pageError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
