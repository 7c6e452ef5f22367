package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/incidentbot/incidentbot/matcher"
)

const instructions = `incidentbot holds a library of past incidents: public postmortems and the team's own, each with symptoms, components, root cause, what helped and lessons.
Use match_alert with the text of an alert or an incident-channel message to get the cases most like it, exactly as the Slack bot would answer.
Use search_incidents for a lookup by words and filters, get_incident to read a case, similar_incidents for cases like a known one, list_incidents to browse, and vocab for the tag ids filters take.
Case texts are in English and Korean; pass lang "ko" to read Korean.`

// SearchArgs are the arguments of search_incidents.
type SearchArgs struct {
	Query     string `json:"query" jsonschema:"words describing the problem, e.g. 'TLS certificate expired on the API gateway'; may also hold filters written as symptom:ID component:ID root_cause:ID org:NAME since:YYYY"`
	Symptom   string `json:"symptom,omitempty" jsonschema:"only cases with this symptom id (see vocab), e.g. high-latency"`
	Component string `json:"component,omitempty" jsonschema:"only cases with this component id (see vocab), e.g. dns"`
	RootCause string `json:"root_cause,omitempty" jsonschema:"only cases with this root cause id (see vocab), e.g. config-change"`
	Org       string `json:"org,omitempty" jsonschema:"only cases of this organisation, e.g. cloudflare"`
	Since     string `json:"since,omitempty" jsonschema:"only cases on or after this date: YYYY, YYYY-MM or YYYY-MM-DD"`
	Lang      string `json:"lang,omitempty" jsonschema:"language of the titles: en or ko; by default the query's language"`
	Limit     int    `json:"limit,omitempty" jsonschema:"at most this many cases, 1 to 100 (default 10)"`
}

// MatchArgs are the arguments of match_alert.
type MatchArgs struct {
	Text string `json:"text" jsonschema:"the alert or message text as it arrived, e.g. a Prometheus alert or a line from the incident channel, in English or Korean"`
	Top  int    `json:"top,omitempty" jsonschema:"at most this many cases, 1 to 100 (default 3, as the bot)"`
}

// GetArgs are the arguments of get_incident.
type GetArgs struct {
	ID   string `json:"id" jsonschema:"a case id as the other tools return it, e.g. cloudflare-2019-07-02"`
	Lang string `json:"lang,omitempty" jsonschema:"language to read the case in: en (default) or ko"`
}

// SimilarArgs are the arguments of similar_incidents.
type SimilarArgs struct {
	ID    string `json:"id" jsonschema:"the case to find others like"`
	Lang  string `json:"lang,omitempty" jsonschema:"language of the titles: en (default) or ko"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many cases, 1 to 100 (default 5)"`
}

// ListArgs are the arguments of list_incidents.
type ListArgs struct {
	Symptom   string `json:"symptom,omitempty" jsonschema:"only cases with this symptom id (see vocab)"`
	Component string `json:"component,omitempty" jsonschema:"only cases with this component id (see vocab)"`
	RootCause string `json:"root_cause,omitempty" jsonschema:"only cases with this root cause id (see vocab)"`
	Org       string `json:"org,omitempty" jsonschema:"only cases of this organisation"`
	Since     string `json:"since,omitempty" jsonschema:"only cases on or after this date: YYYY, YYYY-MM or YYYY-MM-DD"`
	Lang      string `json:"lang,omitempty" jsonschema:"language of the titles: en (default) or ko"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"next_cursor from the previous page; omit for the first page"`
	Limit     int    `json:"limit,omitempty" jsonschema:"cases per page, 1 to 100 (default 20)"`
}

// VocabArgs are the arguments of vocab.
type VocabArgs struct {
	Lang string `json:"lang,omitempty" jsonschema:"language of labels and definitions: en (default) or ko"`
}

func (a SearchArgs) filters() Filters {
	return oneFilter(a.Symptom, a.Component, a.RootCause, a.Org, a.Since)
}
func (a ListArgs) filters() Filters {
	return oneFilter(a.Symptom, a.Component, a.RootCause, a.Org, a.Since)
}

func oneFilter(symptom, component, cause, org, since string) Filters {
	one := func(s string) []string {
		if s = strings.TrimSpace(s); s == "" {
			return nil
		}
		return []string{s}
	}
	return Filters{Symptoms: one(symptom), Components: one(component), RootCauses: one(cause), Orgs: one(org), Since: strings.TrimSpace(since)}
}

// inputSchema infers a tool's input schema from its arguments type and
// tightens it: languages are an enum, counts have bounds.
func inputSchema[T any](required ...string) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err)
	}
	for name, p := range s.Properties {
		switch name {
		case "lang":
			p.Enum = []any{"en", "ko"}
		case "limit", "top":
			p.Minimum, p.Maximum = ptr(1.0), ptr(float64(maxLimit))
		case "since":
			p.Pattern = `^[0-9]{4}(-[0-9]{2}(-[0-9]{2})?)?$`
		}
	}
	s.Required = required
	s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	return s
}

func ptr[T any](v T) *T { return &v }

var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}

func (s *Server) newMCP() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "incidentbot", Title: "incidentbot past incidents", Version: s.opts.Version},
		&mcp.ServerOptions{Instructions: instructions, Logger: s.opts.Logger})
	m := s.opts.Matcher

	mcp.AddTool(srv, &mcp.Tool{Name: "search_incidents", Title: "Search past incidents", Annotations: readOnly,
		Description: "Search the library of past incidents by words and filters. Returns cases ranked best first, each with a score from 0 to 1 and why it matched: the symptoms and components it shares with the query and the words that matched. Use vocab for filter ids.",
		InputSchema: inputSchema[SearchArgs]("query")},
		func(ctx context.Context, _ *mcp.CallToolRequest, a SearchArgs) (*mcp.CallToolResult, matcher.View, error) {
			v, err := search(ctx, m(), a.Query, a.filters(), a.Lang, a.Limit)
			return nil, v, err
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "match_alert", Title: "Match an alert to past incidents", Annotations: readOnly,
		Description: "Answer an alert or incident-channel message the way the incidentbot Slack bot does: the symptoms and components the text signals, and the past cases most like it that clear the confidence floor (possibly none). The answer is the same object as `incidentbot match --json`.",
		InputSchema: inputSchema[MatchArgs]("text")},
		func(ctx context.Context, _ *mcp.CallToolRequest, a MatchArgs) (*mcp.CallToolResult, matcher.View, error) {
			v, err := match(ctx, m(), a.Text, a.Top)
			return nil, v, err
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "get_incident", Title: "Read a past incident", Annotations: readOnly,
		Description: "Read one case in full: summary, what responders saw, trigger, detection, tags with labels, root cause, what helped, action items, lessons, timeline, related cases and public sources.",
		InputSchema: inputSchema[GetArgs]("id")},
		func(ctx context.Context, _ *mcp.CallToolRequest, a GetArgs) (*mcp.CallToolResult, CaseView, error) {
			l, err := checkLang(a.Lang)
			if err != nil {
				return nil, CaseView{}, err
			}
			mm := m()
			c, err := get(mm, a.ID)
			if err != nil {
				return nil, CaseView{}, err
			}
			return nil, viewCase(mm.Library(), mm.Taxonomy(), c, l, CaseURL(s.opts.PublicURL, c.ID, string(l))), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "similar_incidents", Title: "Incidents like a known one", Annotations: readOnly,
		Description: "Find the past cases most like a given case, ranked by the matcher over the case's own text, with scores and why each matched.",
		InputSchema: inputSchema[SimilarArgs]("id")},
		func(ctx context.Context, _ *mcp.CallToolRequest, a SimilarArgs) (*mcp.CallToolResult, matcher.View, error) {
			v, err := similar(ctx, m(), a.ID, a.Lang, a.Limit)
			return nil, v, err
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_incidents", Title: "Browse past incidents", Annotations: readOnly,
		Description: "List cases newest first, optionally only those with a symptom, component, root cause, organisation or date. Returns a page of cases and next_cursor; pass it back as cursor for the next page.",
		InputSchema: inputSchema[ListArgs]()},
		func(ctx context.Context, _ *mcp.CallToolRequest, a ListArgs) (*mcp.CallToolResult, Page, error) {
			p, err := list(ctx, m(), "", a.filters(), a.Lang, a.Cursor, a.Limit)
			return nil, p, err
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "vocab", Title: "Tag vocabulary", Annotations: readOnly,
		Description: "The controlled vocabulary cases are tagged with: symptom, component, root cause and contributing-factor ids, each with a label and a definition. Filters of the other tools take these ids.",
		InputSchema: inputSchema[VocabArgs]()},
		func(ctx context.Context, _ *mcp.CallToolRequest, a VocabArgs) (*mcp.CallToolResult, Vocab, error) {
			l, err := checkLang(a.Lang)
			return nil, vocab(m().Taxonomy(), l), err
		})

	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "incident", Title: "A past incident",
		URITemplate: "incident://{id}", MIMEType: "application/json",
		Description: "One case of the library as stored, in the Incident Library format, in English and Korean."},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			uri := req.Params.URI
			id, ok := strings.CutPrefix(uri, "incident://")
			if ok {
				id, _ = url.PathUnescape(id)
			}
			c, found := m().Case(id)
			if !ok || !found {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			data, err := json.MarshalIndent(c, "", "  ")
			if err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(data)}}}, nil
		})
	return srv
}

// ServeStdio serves MCP over a pair of streams (the process's standard
// input and output) until the client disconnects or ctx ends.
func (s *Server) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	err := s.mcp.Run(ctx, &mcp.IOTransport{Reader: in, Writer: out})
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// MCP returns the MCP server, to run over a transport of the caller's.
func (s *Server) MCP() *mcp.Server { return s.mcp }
