package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/incidentbot/incidentbot/api"
	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// TestCaseKeptToAChannelIsNeverServed: a case the matcher keeps to one
// channel (a team case captured in a private channel) is not revealed by
// any route of the HTTP API, the library page or any MCP tool or
// resource, which know no channel.
func TestCaseKeptToAChannelIsNeverServed(t *testing.T) {
	const (
		kept  = "tl-010"
		title = "matchmaking server" // in its title
		alert = "[FIRING:1] KubePodCrashLooping matchmaking: pods OOMKilled and in CrashLoopBackOff after the winter update"
	)
	set, err := cases.Load("../matcher/testdata/library", cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	lib, _ := cases.NewLibrary(set)
	open, err := matcher.New(lib, matcher.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if ans, err := open.Match(context.Background(), alert, 3); err != nil || len(ans.Results) == 0 || ans.Results[0].Case.ID != kept {
		t.Fatalf("without the scope the alert does not find %s first: %v", kept, err)
	}
	m, err := matcher.New(lib, matcher.Options{Only: map[string]string{kept: "G0PRIV"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := api.New(api.Options{Matcher: func() *matcher.Matcher { return m }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	// An answer to a request that names the case may repeat its id ("no
	// case tl-010"), but nothing of the case.
	reveals := func(body string, named bool) bool {
		return strings.Contains(body, title) || (!named && strings.Contains(body, kept))
	}

	for _, req := range []struct{ method, path, body string }{
		{"GET", "/api/v1/cases/" + kept, ""},
		{"GET", "/api/v1/cases?symptom=crash-loop&limit=100", ""},
		{"GET", "/api/v1/cases?q=matchmaking+OOMKilled&limit=100", ""},
		{"GET", "/api/v1/cases?limit=100", ""},
		{"POST", "/api/v1/match", `{"text": "` + alert + `", "top": 10}`},
		{"GET", "/", ""},
		{"GET", "/?q=matchmaking+OOMKilled", ""},
		{"GET", "/cases/" + kept, ""},
	} {
		r, err := http.NewRequest(req.method, ts.URL+req.path, strings.NewReader(req.body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		named := strings.HasSuffix(req.path, "/"+kept)
		if reveals(string(body), named) || (named && resp.StatusCode != http.StatusNotFound) {
			t.Errorf("%s %s (%d) reveals the kept case: %.300s", req.method, req.path, resp.StatusCode, body)
		}
	}

	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.MCP().Run(ctx, st) }()
	defer func() {
		cancel()
		<-done
	}()
	cs := connect(t, ct)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"match_alert", map[string]any{"text": alert}},
		{"search_incidents", map[string]any{"query": "matchmaking OOMKilled CrashLoopBackOff", "limit": 20}},
		{"get_incident", map[string]any{"id": kept}},
		{"similar_incidents", map[string]any{"id": kept, "limit": 5}},
		{"similar_incidents", map[string]any{"id": "tl-001", "limit": 20}},
		{"list_incidents", map[string]any{"symptom": "crash-loop", "limit": 20}},
	} {
		res, text := call(t, cs, c.tool, c.args)
		named := c.args["id"] == kept
		if reveals(text, named) || (named && !res.IsError) {
			t.Errorf("MCP %s %v reveals the kept case: %.300s", c.tool, c.args, text)
		}
	}
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	if res, err := cs.ReadResource(rctx, &mcp.ReadResourceParams{URI: "incident://" + kept}); err == nil {
		t.Errorf("the kept case is readable as a resource: %v", res)
	}
}
