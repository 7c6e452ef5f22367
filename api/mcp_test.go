package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/incidentbot/incidentbot/api"
	"github.com/incidentbot/incidentbot/matcher"
)

// bearer adds a token to every request of an HTTP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func connect(t *testing.T, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return res, text.String()
}

// structured decodes a tool's structured result.
func structured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		t.Fatalf("structured content: %v", err)
	}
}

// exerciseMCP runs what an assistant does against a connected server:
// list the tools, call each, ask for an unknown id, pass a bad argument,
// read a case as a resource.
func exerciseMCP(t *testing.T, cs *mcp.ClientSession) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const id = "cloudflare-2019-07-02"

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if len(tool.Description) < 60 {
			t.Errorf("%s: the description %q is too short to explain the tool", tool.Name, tool.Description)
		}
		schema, _ := json.Marshal(tool.InputSchema)
		if tool.Name != "vocab" && tool.Name != "list_incidents" && !strings.Contains(string(schema), `"required"`) {
			t.Errorf("%s: input schema has no required arguments: %s", tool.Name, schema)
		}
		if strings.Contains(string(schema), `"lang"`) && !strings.Contains(string(schema), `"enum":["en","ko"]`) {
			t.Errorf("%s: lang is not an enum of en and ko: %s", tool.Name, schema)
		}
	}
	slices.Sort(names)
	if want := []string{"get_incident", "list_incidents", "match_alert", "search_incidents", "similar_incidents", "vocab"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	t.Run("match_alert", func(t *testing.T) {
		res, _ := call(t, cs, "match_alert", map[string]any{"text": "x509: certificate has expired and TLS handshakes fail for every client"})
		var v matcher.View
		structured(t, res, &v)
		if res.IsError || len(v.Results) == 0 || len(v.Results) > 3 || v.Results[0].Score <= 0 {
			t.Errorf("%+v", v)
		}
	})
	t.Run("search_incidents", func(t *testing.T) {
		res, text := call(t, cs, "search_incidents", map[string]any{"query": "regular expression CPU WAF", "component": "waf-bot-protection", "lang": "ko", "limit": 5})
		var v matcher.View
		structured(t, res, &v)
		if res.IsError || len(v.Results) == 0 || v.Results[0].ID != id || v.Language != "ko" {
			t.Fatalf("%s", text)
		}
		if r := v.Results[0]; r.Score <= 0 || len(r.Terms)+len(r.Components)+len(r.Symptoms) == 0 {
			t.Errorf("no score or no why: %+v", r)
		}
	})
	t.Run("get_incident", func(t *testing.T) {
		res, text := call(t, cs, "get_incident", map[string]any{"id": id, "lang": "ko"})
		var v api.CaseView
		structured(t, res, &v)
		if res.IsError || v.ID != id || v.Language != "ko" || v.Summary == "" || len(v.Remediation) == 0 || v.RootCause == nil {
			t.Errorf("%s", text)
		}
	})
	t.Run("similar_incidents", func(t *testing.T) {
		res, text := call(t, cs, "similar_incidents", map[string]any{"id": id, "limit": 3})
		var v matcher.View
		structured(t, res, &v)
		if res.IsError || len(v.Results) != 3 || slices.ContainsFunc(v.Results, func(r matcher.ResultView) bool { return r.ID == id }) {
			t.Errorf("%s", text)
		}
	})
	t.Run("list_incidents", func(t *testing.T) {
		res, text := call(t, cs, "list_incidents", map[string]any{"component": "waf-bot-protection", "limit": 2})
		var p api.Page
		structured(t, res, &p)
		if res.IsError || len(p.Cases) != 2 || p.NextCursor == "" {
			t.Fatalf("%s", text)
		}
		res, text = call(t, cs, "list_incidents", map[string]any{"component": "waf-bot-protection", "limit": 2, "cursor": p.NextCursor})
		var p2 api.Page
		structured(t, res, &p2)
		if res.IsError || len(p2.Cases) == 0 || p2.Cases[0].ID == p.Cases[0].ID || p2.Cases[0].ID == p.Cases[1].ID {
			t.Errorf("second page repeats the first: %s", text)
		}
	})
	t.Run("vocab", func(t *testing.T) {
		res, text := call(t, cs, "vocab", nil)
		var v api.Vocab
		structured(t, res, &v)
		if res.IsError || !slices.ContainsFunc(v.Components, func(tag api.VocabTag) bool { return tag.ID == "waf-bot-protection" && tag.Definition != "" }) {
			t.Errorf("%s", text)
		}
	})
	t.Run("unknown id", func(t *testing.T) {
		for _, tool := range []string{"get_incident", "similar_incidents"} {
			res, text := call(t, cs, tool, map[string]any{"id": "cloudflare-2019-07-03"})
			if !res.IsError || !strings.Contains(text, `no case "cloudflare-2019-07-03"`) || !strings.Contains(text, id) {
				t.Errorf("%s: error %v, %q; want an error suggesting %s", tool, res.IsError, text, id)
			}
		}
	})
	t.Run("bad argument", func(t *testing.T) {
		for _, tc := range []struct {
			tool    string
			args    map[string]any
			mention string
		}{
			{"get_incident", map[string]any{"id": id, "lang": "fr"}, "lang"},
			{"search_incidents", map[string]any{"query": "dns", "limit": 0}, "limit"},
			{"search_incidents", map[string]any{"query": "dns", "symptom": "slow"}, "symptom"},
			{"search_incidents", map[string]any{"query": "dns", "since": "yesterday"}, "since"},
			{"match_alert", map[string]any{}, "text"},
			{"match_alert", map[string]any{"text": "  "}, "text"},
			{"match_alert", map[string]any{"text": 42}, "text"},
			{"list_incidents", map[string]any{"cursor": "not-ours"}, "cursor"},
			{"vocab", map[string]any{"langs": "ko"}, "langs"},
		} {
			res, text := call(t, cs, tc.tool, tc.args)
			if !res.IsError || !strings.Contains(text, tc.mention) {
				t.Errorf("%s %v: error %v, %q; want an error naming %s", tc.tool, tc.args, res.IsError, text, tc.mention)
			}
		}
	})
	t.Run("resource", func(t *testing.T) {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "incident://" + id})
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			ID    string
			Title struct{ En, Ko string }
		}
		if len(res.Contents) != 1 || json.Unmarshal([]byte(res.Contents[0].Text), &c) != nil || c.ID != id || c.Title.En == "" || c.Title.Ko == "" {
			t.Errorf("%+v", res.Contents)
		}
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "incident://no-such-case"}); err == nil {
			t.Error("an unknown case read as a resource")
		}
		tmpl, err := cs.ListResourceTemplates(ctx, nil)
		if err != nil || len(tmpl.ResourceTemplates) != 1 || tmpl.ResourceTemplates[0].URITemplate != "incident://{id}" {
			t.Errorf("templates %+v, %v", tmpl, err)
		}
	})
}

func TestMCPOverStreamableHTTP(t *testing.T) {
	_, ts := newServer(t, api.Options{Token: "mcp-token"})
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"mcp-token", http.DefaultTransport}}})
	exerciseMCP(t, cs)
}

func TestMCPInMemory(t *testing.T) {
	s, _ := newServer(t, api.Options{})
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.MCP().Run(ctx, st) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	exerciseMCP(t, connect(t, ct))
}
