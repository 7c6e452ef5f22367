package api_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/incidentbot/incidentbot/api"
	"github.com/incidentbot/incidentbot/matcher"
)

func fuzzHandler(f *testing.F) *api.Server {
	m := builtin(f)
	s, err := api.New(api.Options{Matcher: func() *matcher.Matcher { return m }, MaxBody: 64 << 10})
	if err != nil {
		f.Fatal(err)
	}
	return s
}

// Any body gets an answer or a JSON error the client is blamed for, never
// a failure of the server.
func FuzzMatchBody(f *testing.F) {
	s := fuzzHandler(f)
	for _, seed := range []string{`{"text": "502s from the load balancer", "top": 5}`, `{"text": "디스크 가득 참"}`, `{"text": ""}`,
		`{"text": "a", "top": 1e309}`, `{"text": "\ud800"}`, `[]`, `null`, `{"text": "x"}{`, "\xff\xfe", `{"top": -0}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/api/v1/match", bytes.NewReader(body))
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		switch rec.Code {
		case 200:
			var v matcher.View
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || v.Language == "" || v.Results == nil {
				t.Fatalf("200 with %s", rec.Body)
			}
		case 400, 413:
			var e struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("%d with %s", rec.Code, rec.Body)
			}
		default:
			t.Fatalf("%d for %q: %s", rec.Code, body, rec.Body)
		}
	})
}

// Any query string of the listing gets a page or a 400 naming a parameter.
func FuzzCasesQuery(f *testing.F) {
	s := fuzzHandler(f)
	for _, seed := range []string{"limit=5", "q=dns&symptom=high-latency", "cursor=eyJvIjotMX0", "since=2023-13", "org=%22x", "q=symptom:nope",
		"q=%00%ff", "lang=ko&limit=100&component=cdn,dns-server", "limit=99999999999999999999"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, query string) {
		req := httptest.NewRequest("GET", "/api/v1/cases", nil)
		req.URL.RawQuery = query
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != 200 && rec.Code != 400 {
			t.Fatalf("%d for %q: %s", rec.Code, query, rec.Body)
		}
		if rec.Code == 400 {
			var e struct {
				Error struct{ Code, Message, Param string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Message == "" {
				t.Fatalf("400 for %q with %s", query, rec.Body)
			}
		}
	})
}
