package api

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/incidentbot/incidentbot/cases"
)

// MatchRequest is the body of POST /api/v1/match.
type MatchRequest struct {
	Text string `json:"text"`
	Top  int    `json:"top"`
}

func (s *Server) postMatch(w http.ResponseWriter, r *http.Request) {
	var req MatchRequest
	if !s.readJSON(w, r, &req) {
		return
	}
	v, err := match(r.Context(), s.opts.Matcher(), req.Text, req.Top)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// readJSON decodes one JSON object from a bounded body into v, or writes
// the 4xx that names what is wrong with it.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body := http.MaxBytesReader(w, r.Body, s.opts.MaxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("more than one JSON value")
		}
	}
	if err == nil {
		return true
	}
	var tooBig *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", "", fmt.Sprintf("the request body is larger than %d KiB: send the alert text, not a whole log", s.opts.MaxBody>>10))
	case errors.Is(err, io.ErrUnexpectedEOF):
		writeError(w, http.StatusBadRequest, "invalid_json", "", "the request body is not valid JSON: it ends before the object is closed")
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "invalid_json", "", `the request body is empty: send a JSON object such as {"text": "502s from the load balancer"}`)
	case errors.As(err, &typeErr) && typeErr.Field == "":
		writeError(w, http.StatusBadRequest, "invalid_json", "", fmt.Sprintf(`the request body must be a JSON object such as {"text": "502s from the load balancer"}, not %s`, typeErr.Value))
	case errors.As(err, &typeErr):
		writeError(w, http.StatusBadRequest, "invalid_json", typeErr.Field, fmt.Sprintf("field %q must be a JSON %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value))
	case errors.As(err, &syntaxErr):
		writeError(w, http.StatusBadRequest, "invalid_json", "", fmt.Sprintf("the request body is not valid JSON (at byte %d): %v", syntaxErr.Offset, err))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		writeError(w, http.StatusBadRequest, "invalid_json", field, fmt.Sprintf("unknown field %q: the body takes \"text\" and \"top\"", field))
	default:
		writeError(w, http.StatusBadRequest, "invalid_json", "", "the request body is not a JSON object: "+err.Error())
	}
	return false
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "float64":
		return "number"
	case "string":
		return "string"
	case "struct", "map":
		return "object"
	}
	return goKind
}

// params reads a GET request's query, rejecting parameters the route does
// not take so that a typo is not silently ignored.
type params struct {
	q   url.Values
	err error
}

func newParams(r *http.Request, allowed ...string) *params {
	q := r.URL.Query()
	p := &params{q: q}
	for k := range q {
		known := false
		for _, a := range allowed {
			known = known || a == k
		}
		if !known {
			p.err = argErrorf(k, "unknown parameter; this route takes %s", strings.Join(allowed, ", "))
		}
	}
	return p
}

func (p *params) str(name string) string { return p.q.Get(name) }
func (p *params) all(name string) []string {
	var out []string
	for _, v := range p.q[name] {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// lang reads the lang parameter. A bad language is the error reported, even
// over an unknown parameter, since it is the one the caller most likely meant.
func (p *params) lang() cases.Lang {
	l, err := checkLang(p.str("lang"))
	if err != nil {
		p.err = err
	}
	return l
}

func (p *params) int(name string) int {
	v := p.q.Get(name)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil && p.err == nil {
		p.err = argErrorf(name, "%q is not a whole number", v)
	}
	if n == 0 && err == nil && p.err == nil {
		p.err = argErrorf(name, "must be at least 1")
	}
	return n
}

func (s *Server) getCases(w http.ResponseWriter, r *http.Request) {
	p := newParams(r, "q", "symptom", "component", "root_cause", "contributing", "org", "since", "lang", "cursor", "limit")
	f := Filters{Symptoms: p.all("symptom"), Components: p.all("component"), RootCauses: p.all("root_cause"),
		Contributing: p.all("contributing"), Orgs: p.all("org"), Since: p.str("since")}
	limit := p.int("limit")
	if p.err != nil {
		s.fail(w, r, p.err)
		return
	}
	page, err := list(r.Context(), s.opts.Matcher(), p.str("q"), f, p.str("lang"), p.str("cursor"), limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) getCase(w http.ResponseWriter, r *http.Request) {
	p := newParams(r, "lang")
	l := p.lang()
	if p.err != nil {
		s.fail(w, r, p.err)
		return
	}
	m := s.opts.Matcher()
	c, err := get(m, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, viewCase(m.Library(), m.Taxonomy(), c, l, CaseURL(s.opts.PublicURL, c.ID, string(l))))
}

func (s *Server) getSimilar(w http.ResponseWriter, r *http.Request) {
	p := newParams(r, "lang", "limit")
	limit := p.int("limit")
	if p.err != nil {
		s.fail(w, r, p.err)
		return
	}
	v, err := similar(r.Context(), s.opts.Matcher(), r.PathValue("id"), p.str("lang"), limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) getVocab(w http.ResponseWriter, r *http.Request) {
	p := newParams(r, "lang")
	l := p.lang()
	if p.err != nil {
		s.fail(w, r, p.err)
		return
	}
	writeJSON(w, http.StatusOK, vocab(s.opts.Matcher().Taxonomy(), l))
}

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI document of the HTTP API.
func OpenAPI() []byte { return openAPI }

func (s *Server) getOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(openAPI)
}
