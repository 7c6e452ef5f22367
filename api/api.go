// Package api serves the case library to programs and people: a JSON HTTP
// API described by an OpenAPI document, an MCP server for assistants (over
// stdio and over streamable HTTP) and a plain server-rendered page to
// search and read cases in English or Korean.
//
// Every surface answers from the same functions, so a text matched through
// POST /api/v1/match, the match_alert tool or incidentbot match --json gets
// the same answer.
package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/incidentbot/incidentbot/matcher"
)

// TokenEnv is the environment variable that holds the API's bearer token.
const TokenEnv = "INCIDENTBOT_API_TOKEN"

// mcpIdle is how long an MCP client over HTTP may stay silent before the
// server forgets it; it reconnects with a new initialize.
const mcpIdle = 30 * time.Minute

// DefaultMaxBody bounds a request body.
const DefaultMaxBody = 1 << 20

// Options configure a Server.
type Options struct {
	// Matcher returns the matcher over the library in use; run swaps it when
	// the library is reloaded. Required.
	Matcher func() *matcher.Matcher
	// Token, when set, is required of every request as
	// "Authorization: Bearer TOKEN". Use CheckListen to decide whether an
	// address needs one.
	Token string
	// PublicURL is where people reach the library page (for links in
	// answers), e.g. https://incidents.example.com. Optional.
	PublicURL string
	// MaxBody bounds request bodies; DefaultMaxBody when zero.
	MaxBody int64
	// Version is reported to MCP clients.
	Version string
	// Logger receives errors that are not the client's fault.
	Logger *slog.Logger
}

// Server serves the library over HTTP and MCP. It is safe for concurrent
// use.
type Server struct {
	opts    Options
	public  *url.URL
	mcp     *mcp.Server
	handler http.Handler
	routes  []Route
}

// Route is one path the server answers, for the OpenAPI document's test.
type Route struct {
	Method  string // GET, POST; "" for every method (/mcp)
	Pattern string // as in net/http, e.g. /api/v1/cases/{id}
}

// New builds a server.
func New(opts Options) (*Server, error) {
	if opts.Matcher == nil {
		return nil, errors.New("api: Options.Matcher is required")
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{opts: opts}
	if opts.PublicURL != "" {
		u, err := url.Parse(strings.TrimRight(opts.PublicURL, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("public URL %q is not an http(s) URL such as https://incidents.example.com", opts.PublicURL)
		}
		s.public = u
	}
	s.mcp = s.newMCP()
	if err := s.routeAll(); err != nil {
		return nil, err
	}
	return s, nil
}

// Handler returns the HTTP handler of every route.
func (s *Server) Handler() http.Handler { return s.handler }

// Routes lists the routes the handler answers.
func (s *Server) Routes() []Route { return s.routes }

// CaseURL returns the library page of a case, or "" without a public URL.
func (s *Server) CaseURL(id string) string { return CaseURL(s.opts.PublicURL, id, "") }

// CaseURL returns the page of a case under a public URL, in a language
// when lang is set; "" when public is empty.
func CaseURL(public, id, lang string) string {
	if public == "" {
		return ""
	}
	u := strings.TrimRight(public, "/") + "/cases/" + url.PathEscape(id)
	if lang != "" && lang != "en" {
		u += "?lang=" + url.QueryEscape(lang)
	}
	return u
}

// CheckListen enforces the token rule: listening beyond the loopback
// interface requires a token. It returns a message to log at start that
// says how requests are protected.
func CheckListen(addr, token string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %w (write host:port, e.g. 127.0.0.1:8088)", addr, err)
	}
	if loopbackHost(host) {
		if token == "" {
			return "listening on loopback only; no token required (set " + TokenEnv + " to require one)", nil
		}
		return "requests need Authorization: Bearer $" + TokenEnv, nil
	}
	if token == "" {
		return "", fmt.Errorf("%s listens beyond this machine: set %s to a secret token (clients send Authorization: Bearer TOKEN), or listen on 127.0.0.1", addr, TokenEnv)
	}
	return "listening beyond loopback; requests need Authorization: Bearer $" + TokenEnv, nil
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// routeAll builds the handler: the routes, the token check, and the
// protection of an open loopback server from other sites.
func (s *Server) routeAll() error {
	mux := http.NewServeMux()
	type methods map[string]http.HandlerFunc
	paths := []struct {
		pattern string
		m       methods
	}{
		{"/api/v1/match", methods{"POST": s.postMatch}},
		{"/api/v1/cases", methods{"GET": s.getCases}},
		{"/api/v1/cases/{id}", methods{"GET": s.getCase}},
		{"/api/v1/cases/{id}/similar", methods{"GET": s.getSimilar}},
		{"/api/v1/vocab", methods{"GET": s.getVocab}},
		{"/api/v1/openapi.json", methods{"GET": s.getOpenAPI}},
		{"/{$}", methods{"GET": s.pageSearch}},
		{"/cases/{id}", methods{"GET": s.pageCase}},
	}
	for _, p := range paths {
		for method := range p.m {
			s.routes = append(s.routes, Route{Method: method, Pattern: p.pattern})
		}
		mux.HandleFunc(p.pattern, func(w http.ResponseWriter, r *http.Request) {
			method := r.Method
			if method == http.MethodHead {
				method = http.MethodGet
			}
			h, ok := p.m[method]
			if !ok {
				var allow []string
				for m := range p.m {
					allow = append(allow, m)
				}
				w.Header().Set("Allow", strings.Join(allow, ", "))
				writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "", fmt.Sprintf("%s takes %s, not %s", r.URL.Path, strings.Join(allow, " or "), r.Method))
				return
			}
			h(w, r)
		})
	}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger:                     s.opts.Logger,
		MaxRequestBodyBytes:        s.opts.MaxBody,
		SessionTimeout:             mcpIdle, // clients that leave without saying so
		DisableLocalhostProtection: true,    // hostCheck below does it for every route
	})
	mux.Handle("/mcp", mcpHandler)
	s.routes = append(s.routes, Route{Pattern: "/mcp"})
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "", fmt.Sprintf("no route %s %s; GET /api/v1/openapi.json describes them", r.Method, r.URL.Path))
	})

	var h http.Handler = mux
	h = http.NewCrossOriginProtection().Handler(h)
	h = s.hostCheck(h)
	h = s.auth(h)
	s.handler = h
	return nil
}

// auth requires the bearer token when one is set.
func (s *Server) auth(next http.Handler) http.Handler {
	if s.opts.Token == "" {
		return next
	}
	want := []byte("Bearer " + s.opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="incidentbot"`)
			msg := "this server needs Authorization: Bearer TOKEN, with the token it was started with (" + TokenEnv + ")"
			if len(got) > 0 {
				msg = "the bearer token is not the one this server was started with (" + TokenEnv + ")"
			}
			writeError(w, http.StatusUnauthorized, "unauthorized", "", msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostCheck refuses requests that reach an open server (no token) through
// a loopback address under another host name: a web page the user visits
// could otherwise rebind its own name to 127.0.0.1 and read the library.
// A server with a token is protected by the token and may sit behind a
// proxy under any name.
func (s *Server) hostCheck(next http.Handler) http.Handler {
	if s.opts.Token != "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		if !loopbackHost(host) && (s.public == nil || !strings.EqualFold(host, s.public.Hostname())) {
			writeError(w, http.StatusForbidden, "forbidden_host", "", fmt.Sprintf("this server answers only requests for localhost, not for %q; to serve under another name set %s", r.Host, TokenEnv))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// apiError is the body of every error the JSON API returns.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Param   string `json:"param,omitempty"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, param, msg string) {
	var e apiError
	e.Error.Code, e.Error.Message, e.Error.Param = code, msg, param
	writeJSON(w, status, e)
}

// fail writes err as the response: a bad argument is the client's (400),
// an unknown id is 404, anything else is ours (500, logged).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *argError
	var nf *notFoundError
	switch {
	case errors.As(err, &ae):
		writeError(w, http.StatusBadRequest, "invalid_argument", ae.Param, err.Error())
	case errors.As(err, &nf):
		writeError(w, http.StatusNotFound, "not_found", "id", err.Error())
	case errors.Is(err, context.Canceled):
		// The client left.
	default:
		s.opts.Logger.Error("api request failed", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "", "the server could not answer; the error is logged")
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
