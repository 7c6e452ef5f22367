package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/incidentbot/incidentbot/api"
	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

var (
	matcherOnce sync.Once
	sharedM     *matcher.Matcher
	matcherErr  error
)

// builtin returns a matcher over the built-in library, built once for the
// package's tests.
func builtin(t testing.TB) *matcher.Matcher {
	t.Helper()
	matcherOnce.Do(func() {
		tax := cases.DefaultTaxonomy()
		set, err := cases.Builtin(tax)
		if err != nil {
			matcherErr = err
			return
		}
		lib, _ := cases.NewLibrary(set)
		sharedM, matcherErr = matcher.New(lib, matcher.Options{})
	})
	if matcherErr != nil {
		t.Fatal(matcherErr)
	}
	return sharedM
}

func init() {
	// The page is HTML: checked for its status and type, its body as text.
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.FileBodyDecoder)
}

func newServer(t *testing.T, opts api.Options) (*api.Server, *httptest.Server) {
	t.Helper()
	m := builtin(t)
	opts.Matcher = func() *matcher.Matcher { return m }
	s, err := api.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

func loadDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI())
	if err != nil {
		t.Fatalf("load OpenAPI document: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("OpenAPI document is invalid: %v", err)
	}
	return doc
}

// checker validates requests and responses against the OpenAPI document.
type checker struct {
	t      *testing.T
	router routers.Router
}

func newChecker(t *testing.T, base string) *checker {
	doc := loadDoc(t)
	doc.Servers = openapi3.Servers{{URL: base}}
	r, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &checker{t: t, router: r}
}

// do sends a request and checks the response against the document. With
// strict, the request itself must be valid by the document too.
func (c *checker) do(req *http.Request, strict bool) (*http.Response, []byte) {
	c.t.Helper()
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, pathParams, err := c.router.FindRoute(vreq)
	if err != nil {
		c.t.Errorf("%s %s is not in the OpenAPI document: %v", req.Method, req.URL.Path, err)
		return resp, body
	}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: pathParams, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}}
	if strict {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			c.t.Errorf("%s %s: the request is not valid by the document: %v", req.Method, req.URL, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: in.Options}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		c.t.Errorf("%s %s: %d response does not match the document: %v\n%s", req.Method, req.URL, resp.StatusCode, err, clip(body))
	}
	return resp, body
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

func get(t *testing.T, base, path string) *http.Request {
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func post(t *testing.T, base, path, body string) *http.Request {
	req, err := http.NewRequest("POST", base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

type apiErr struct {
	Error struct {
		Code, Message, Param string
	}
}

func decodeErr(t *testing.T, body []byte) apiErr {
	t.Helper()
	var e apiErr
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("not a JSON error object (%v): %s", err, clip(body))
	}
	return e
}

// Every route the server answers is in the OpenAPI document, and every
// operation of the document is a route.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	s, _ := newServer(t, api.Options{})
	doc := loadDoc(t)
	routed := map[string]bool{}
	for _, r := range s.Routes() {
		path := strings.TrimSuffix(r.Pattern, "{$}")
		item := doc.Paths.Find(path)
		if item == nil {
			t.Errorf("route %s %s is not in the OpenAPI document", r.Method, r.Pattern)
			continue
		}
		methods := []string{r.Method}
		if r.Method == "" {
			methods = []string{"POST", "GET", "DELETE"}
		}
		for _, m := range methods {
			routed[m+" "+path] = true
			if item.GetOperation(m) == nil {
				t.Errorf("route %s %s has no operation in the OpenAPI document", m, path)
			}
		}
	}
	for path, item := range doc.Paths.Map() {
		for m := range item.Operations() {
			if !routed[m+" "+path] {
				t.Errorf("the OpenAPI document describes %s %s, which the server does not route", m, path)
			}
		}
	}
}

// Each route answers as the document says, on good requests and bad.
func TestRoutes(t *testing.T) {
	_, ts := newServer(t, api.Options{PublicURL: "https://incidents.example.com"})
	c := newChecker(t, ts.URL)
	m := builtin(t)
	id := "cloudflare-2019-07-02"
	if _, ok := m.Case(id); !ok {
		t.Fatalf("the built-in library lost %s; pick another case for this test", id)
	}

	t.Run("match", func(t *testing.T) {
		resp, body := c.do(post(t, ts.URL, "/api/v1/match", `{"text": "p99 latency is up and the load balancer returns 502s after a deploy", "top": 5}`), true)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		var v matcher.View
		json.Unmarshal(body, &v)
		if len(v.Results) == 0 || len(v.Results) > 5 || !slices.Contains(v.Symptoms, "elevated-5xx-errors") {
			t.Errorf("answer: %s", clip(body))
		}
	})
	t.Run("match korean", func(t *testing.T) {
		resp, body := c.do(post(t, ts.URL, "/api/v1/match", `{"text": "인증서가 만료되어 TLS 핸드셰이크가 실패합니다"}`), true)
		var v matcher.View
		json.Unmarshal(body, &v)
		if resp.StatusCode != 200 || v.Language != cases.Korean || len(v.Results) == 0 || len(v.Results) > 3 {
			t.Errorf("%d %s", resp.StatusCode, clip(body))
		}
	})
	t.Run("match chatter is silent", func(t *testing.T) {
		resp, body := c.do(post(t, ts.URL, "/api/v1/match", `{"text": "thanks everyone, good night"}`), true)
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"results":[]`) {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("list", func(t *testing.T) {
		resp, body := c.do(get(t, ts.URL, "/api/v1/cases?limit=5&lang=ko"), true)
		var p api.Page
		json.Unmarshal(body, &p)
		if resp.StatusCode != 200 || len(p.Cases) != 5 || p.NextCursor == "" {
			t.Fatalf("%d %s", resp.StatusCode, clip(body))
		}
		for i := 1; i < len(p.Cases); i++ {
			if p.Cases[i-1].Date < p.Cases[i].Date {
				t.Errorf("not newest first: %s before %s", p.Cases[i-1].ID, p.Cases[i].ID)
			}
		}
	})
	t.Run("list filtered", func(t *testing.T) {
		resp, body := c.do(get(t, ts.URL, "/api/v1/cases?component=dns-server&symptom=dns-resolution-failures&since=2015"), true)
		var p api.Page
		json.Unmarshal(body, &p)
		if resp.StatusCode != 200 || len(p.Cases) == 0 {
			t.Fatalf("%d %s", resp.StatusCode, clip(body))
		}
		for _, s := range p.Cases {
			if !slices.Contains(s.Components, "dns-server") || !slices.Contains(s.Symptoms, "dns-resolution-failures") || s.Date < "2015" {
				t.Errorf("%s does not pass the filters: %+v", s.ID, s)
			}
		}
	})
	t.Run("list with words", func(t *testing.T) {
		resp, body := c.do(get(t, ts.URL, "/api/v1/cases?q="+url.QueryEscape("BGP route leak")+"&limit=3"), true)
		var p api.Page
		json.Unmarshal(body, &p)
		if resp.StatusCode != 200 || len(p.Cases) == 0 || p.Cases[0].Score == nil {
			t.Fatalf("%d %s", resp.StatusCode, clip(body))
		}
		if p.NextCursor != "" {
			resp, body := c.do(get(t, ts.URL, "/api/v1/cases?q="+url.QueryEscape("BGP route leak")+"&limit=3&cursor="+p.NextCursor), true)
			var p2 api.Page
			json.Unmarshal(body, &p2)
			if resp.StatusCode != 200 || len(p2.Cases) > 0 && p2.Cases[0].ID == p.Cases[0].ID {
				t.Errorf("second page: %d %s", resp.StatusCode, clip(body))
			}
			// The cursor of a lookup does not page the plain listing.
			resp, body = c.do(get(t, ts.URL, "/api/v1/cases?limit=3&cursor="+p.NextCursor), false)
			if e := decodeErr(t, body); resp.StatusCode != 400 || e.Error.Param != "cursor" {
				t.Errorf("a lookup's cursor without q: %d %s", resp.StatusCode, body)
			}
		}
	})
	t.Run("list bad", func(t *testing.T) {
		for _, q := range []struct{ query, param string }{
			{"symptom=slow", "symptom"}, {"limit=0", "limit"}, {"limit=1000", "limit"}, {"limit=ten", "limit"},
			{"lang=fr", "lang"}, {"since=last-week", "since"}, {"cursor=xyz", "cursor"}, {"symptoms=high-latency", "symptoms"},
		} {
			resp, body := c.do(get(t, ts.URL, "/api/v1/cases?"+q.query), false)
			e := decodeErr(t, body)
			if resp.StatusCode != 400 || e.Error.Param != q.param || !strings.Contains(e.Error.Message, q.param) {
				t.Errorf("?%s: %d %s; want 400 naming %s", q.query, resp.StatusCode, body, q.param)
			}
		}
	})
	t.Run("case", func(t *testing.T) {
		for _, l := range []string{"en", "ko"} {
			resp, body := c.do(get(t, ts.URL, "/api/v1/cases/"+id+"?lang="+l), true)
			var v api.CaseView
			json.Unmarshal(body, &v)
			cs, _ := m.Case(id)
			if resp.StatusCode != 200 || v.ID != id || v.Title != cs.Title.In(cases.Lang(l)) || v.Summary == "" || len(v.Components) == 0 || v.Components[0].Label == "" {
				t.Errorf("%s: %d %s", l, resp.StatusCode, clip(body))
			}
			if want := "https://incidents.example.com/cases/" + id; !strings.HasPrefix(v.Page, want) {
				t.Errorf("page link %q, want %s...", v.Page, want)
			}
		}
	})
	t.Run("case unknown", func(t *testing.T) {
		resp, body := c.do(get(t, ts.URL, "/api/v1/cases/cloudflare-2019-07-03"), true)
		e := decodeErr(t, body)
		if resp.StatusCode != 404 || e.Error.Code != "not_found" || !strings.Contains(e.Error.Message, "did you mean") || !strings.Contains(e.Error.Message, "cloudflare-2019-07-02") {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("similar", func(t *testing.T) {
		resp, body := c.do(get(t, ts.URL, "/api/v1/cases/"+id+"/similar?limit=4"), true)
		var v matcher.View
		json.Unmarshal(body, &v)
		if resp.StatusCode != 200 || len(v.Results) != 4 {
			t.Fatalf("%d %s", resp.StatusCode, clip(body))
		}
		for _, r := range v.Results {
			if r.ID == id {
				t.Errorf("a case is not similar to itself: %s", clip(body))
			}
		}
		resp, body = c.do(get(t, ts.URL, "/api/v1/cases/no-such-case/similar"), true)
		if resp.StatusCode != 404 {
			t.Errorf("unknown id: %d %s", resp.StatusCode, body)
		}
	})
	t.Run("vocab", func(t *testing.T) {
		resp, body := c.do(get(t, ts.URL, "/api/v1/vocab?lang=ko"), true)
		var v api.Vocab
		json.Unmarshal(body, &v)
		if resp.StatusCode != 200 || len(v.Symptoms) < 10 || len(v.RootCauses) == 0 || v.Symptoms[0].Definition == "" {
			t.Errorf("%d %s", resp.StatusCode, clip(body))
		}
	})
	t.Run("openapi", func(t *testing.T) {
		resp, body := c.do(get(t, ts.URL, "/api/v1/openapi.json"), true)
		if resp.StatusCode != 200 || !bytes.Equal(body, api.OpenAPI()) {
			t.Errorf("%d", resp.StatusCode)
		}
	})
	t.Run("pages", func(t *testing.T) {
		for _, p := range []struct {
			path   string
			status int
			want   string
		}{
			{"/", 200, "<form"}, {"/?q=dns&lang=ko", 200, `lang="ko"`}, {"/cases/" + id, 200, "<h1"},
			{"/cases/" + id + "?lang=ko", 200, "요약"}, {"/cases/nope", 404, "nope"},
		} {
			resp, body := c.do(get(t, ts.URL, p.path), p.status == 200)
			if resp.StatusCode != p.status || !strings.Contains(string(body), p.want) {
				t.Errorf("%s: %d, want %d with %q", p.path, resp.StatusCode, p.status, p.want)
			}
		}
	})
	t.Run("unknown route and method", func(t *testing.T) {
		resp, err := http.Get(ts.URL + "/api/v1/match")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if e := decodeErr(t, body); resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" || e.Error.Code != "method_not_allowed" {
			t.Errorf("GET /api/v1/match: %d %s", resp.StatusCode, body)
		}
		resp, err = http.Get(ts.URL + "/api/v2/cases")
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if e := decodeErr(t, body); resp.StatusCode != 404 || e.Error.Code != "not_found" {
			t.Errorf("/api/v2/cases: %d %s", resp.StatusCode, body)
		}
	})
}

// Bodies that are too large, malformed or wrong get a 4xx whose JSON
// error names the problem.
func TestMatchBadBodies(t *testing.T) {
	_, ts := newServer(t, api.Options{MaxBody: 4 << 10})
	c := newChecker(t, ts.URL)
	big := `{"text": "` + strings.Repeat("disk full ", 1000) + `"}`
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
		mention    string
	}{
		{"oversized", big, 413, "body_too_large", "4 KiB"},
		{"malformed", `{"text": "502s",`, 400, "invalid_json", "not valid JSON"},
		{"not an object", `["502s"]`, 400, "invalid_json", "text"},
		{"empty", ``, 400, "invalid_json", "empty"},
		{"two values", `{"text": "a"} {"text": "b"}`, 400, "invalid_json", "more than one"},
		{"unknown field", `{"txt": "502s"}`, 400, "invalid_json", `"txt"`},
		{"wrong type", `{"text": "502s", "top": "five"}`, 400, "invalid_json", `"top"`},
		{"no text", `{"top": 3}`, 400, "invalid_argument", "text"},
		{"blank text", `{"text": "   "}`, 400, "invalid_argument", "text"},
		{"top too big", `{"text": "502s", "top": 101}`, 400, "invalid_argument", "top"},
		{"top negative", `{"text": "502s", "top": -1}`, 400, "invalid_argument", "top"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := c.do(post(t, ts.URL, "/api/v1/match", tc.body), false)
			e := decodeErr(t, body)
			if resp.StatusCode != tc.status || e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.mention) {
				t.Errorf("%d %s; want %d %s mentioning %s", resp.StatusCode, body, tc.status, tc.code, tc.mention)
			}
		})
	}
}

// The library pages through completely: every case once, in order.
func TestListPagesThroughTheLibrary(t *testing.T) {
	_, ts := newServer(t, api.Options{})
	m := builtin(t)
	seen := map[string]bool{}
	var last api.Summary
	cur := ""
	for pages := 0; ; pages++ {
		if pages > m.Library().Len() {
			t.Fatal("paging does not end")
		}
		resp, err := http.Get(ts.URL + "/api/v1/cases?limit=37&cursor=" + cur)
		if err != nil {
			t.Fatal(err)
		}
		var p api.Page
		json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		for _, s := range p.Cases {
			if seen[s.ID] {
				t.Fatalf("%s listed twice", s.ID)
			}
			seen[s.ID] = true
			if last.ID != "" && (s.Date > last.Date || s.Date == last.Date && s.ID < last.ID) {
				t.Errorf("%s (%s) after %s (%s)", s.ID, s.Date, last.ID, last.Date)
			}
			last = s
		}
		if p.NextCursor == "" {
			break
		}
		cur = p.NextCursor
	}
	if len(seen) != m.Library().Len() {
		t.Errorf("listed %d of %d cases", len(seen), m.Library().Len())
	}
}

// With a token, every route needs it; without one, only loopback names
// are answered.
func TestToken(t *testing.T) {
	_, ts := newServer(t, api.Options{Token: "s3cret-token"})
	for _, path := range []string{"/api/v1/cases", "/api/v1/openapi.json", "/", "/cases/cloudflare-2019-07-02", "/mcp"} {
		for _, auth := range []string{"", "Bearer wrong", "s3cret-token", "Bearer s3cret-token"} {
			req := get(t, ts.URL, path)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if auth == "Bearer s3cret-token" {
				if resp.StatusCode == 401 {
					t.Errorf("%s with the token: 401", path)
				}
				continue
			}
			if e := decodeErr(t, body); resp.StatusCode != 401 || e.Error.Code != "unauthorized" || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s with %q: %d %s", path, auth, resp.StatusCode, body)
			}
			if strings.Contains(string(body), "s3cret") {
				t.Errorf("the error shows the token: %s", body)
			}
		}
	}

	_, open := newServer(t, api.Options{})
	req := get(t, open.URL, "/api/v1/cases")
	req.Host = "rebound.example.net"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if e := decodeErr(t, body); resp.StatusCode != 403 || !strings.Contains(e.Error.Message, api.TokenEnv) {
		t.Errorf("an open server answered another host name: %d %s", resp.StatusCode, body)
	}
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8088", "", true}, {"localhost:8088", "", true}, {"[::1]:0", "", true},
		{"0.0.0.0:8088", "", false}, {":8088", "", false}, {"10.0.0.5:80", "", false}, {"[::]:8088", "", false},
		{"0.0.0.0:8088", "t", true}, {":8088", "t", true}, {"no-port", "", false},
	} {
		msg, err := api.CheckListen(tc.addr, tc.token)
		if (err == nil) != tc.ok {
			t.Errorf("CheckListen(%q, %q) = %q, %v; want ok=%v", tc.addr, tc.token, msg, err, tc.ok)
		}
		if err != nil && tc.addr != "no-port" && !strings.Contains(err.Error(), api.TokenEnv) {
			t.Errorf("the refusal does not say to set %s: %v", api.TokenEnv, err)
		}
		if err == nil && !strings.Contains(msg, api.TokenEnv) {
			t.Errorf("the start message %q does not say how requests are protected", msg)
		}
	}
}

// The page lists the whole library, newest first, a page at a time.
func TestPageListsOlderCases(t *testing.T) {
	_, ts := newServer(t, api.Options{})
	c := newChecker(t, ts.URL)
	more := regexp.MustCompile(`id="more" href="([^"]+)"`)
	first := regexp.MustCompile(`<a href="/cases/([^"?]+)`)
	path, seen := "/?lang=ko", map[string]bool{}
	for pages := 0; path != ""; pages++ {
		if pages > 100 {
			t.Fatal("the listing does not end")
		}
		resp, body := c.do(get(t, ts.URL, html.UnescapeString(path)), true)
		if resp.StatusCode != 200 || !strings.Contains(string(body), `lang="ko"`) {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		for _, m := range first.FindAllStringSubmatch(string(body), -1) {
			if seen[m[1]] {
				t.Fatalf("%s listed twice", m[1])
			}
			seen[m[1]] = true
		}
		path = ""
		if m := more.FindStringSubmatch(string(body)); m != nil {
			path = m[1]
		}
	}
	if n := builtin(t).Library().Len(); len(seen) != n {
		t.Errorf("the page listed %d of %d cases", len(seen), n)
	}
	resp, body := c.do(get(t, ts.URL, "/?cursor=garbage"), false)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `id="error"`) {
		t.Errorf("a bad cursor: %d, want the first page with a note", resp.StatusCode)
	}
}
