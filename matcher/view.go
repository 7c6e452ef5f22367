package matcher

import "github.com/incidentbot/incidentbot/cases"

// View is an answer as programs read it: the object `incidentbot match
// --json` prints, the HTTP API's POST /api/v1/match returns and the MCP
// match_alert tool gives. Every surface builds it here, so they cannot
// drift apart. Slices are never nil, so they encode as [] rather than null.
type View struct {
	Language   cases.Lang   `json:"language"`
	Symptoms   []string     `json:"symptoms"`
	Components []string     `json:"components"`
	Results    []ResultView `json:"results"`
	// RootCause is the cause the text most likely implies, when it implies
	// one, and Evidence the words of the text that imply it.
	RootCause string   `json:"root_cause,omitempty"`
	Evidence  []string `json:"evidence,omitempty"`
}

// ResultView is one case of a View and why it matched.
type ResultView struct {
	ID         string   `json:"id"`
	Title      string   `json:"title"`
	Score      float64  `json:"score"`
	Symptoms   []string `json:"symptoms"`
	Components []string `json:"components"`
	Terms      []string `json:"terms"`
	// Votes are the votes on the case for similar texts that moved it, when
	// the caller passed any (incidentbot match --db).
	Votes *VotesView `json:"votes,omitempty"`
}

// VotesView is how many people marked a case helpful and not relevant for
// texts like the one matched.
type VotesView struct {
	Helpful     int `json:"helpful"`
	NotRelevant int `json:"not_relevant"`
}

// EmptyView is the view of an answer with nothing in it, in English.
func EmptyView() View {
	return View{Language: cases.English, Symptoms: []string{}, Components: []string{}, Results: []ResultView{}}
}

// View returns the answer as programs read it, with titles in the
// answer's language.
func (a *Answer) View() View {
	out := View{Language: a.Lang, Symptoms: []string{}, Components: []string{}, Results: []ResultView{}}
	for _, s := range a.Symptoms {
		out.Symptoms = append(out.Symptoms, s.ID)
	}
	for _, s := range a.Components {
		out.Components = append(out.Components, s.ID)
	}
	if len(a.RootCauses) > 0 {
		out.RootCause, out.Evidence = a.RootCauses[0].ID, a.RootCauses[0].Evidence
	}
	for _, r := range a.Results {
		rv := ResultView{ID: r.Case.ID, Title: r.Case.Title.In(a.Lang), Score: r.Score,
			Symptoms: []string{}, Components: []string{}, Terms: r.Terms}
		if rv.Terms == nil {
			rv.Terms = []string{}
		}
		if r.Votes.Helpful > 0 || r.Votes.NotRelevant > 0 {
			rv.Votes = &VotesView{Helpful: r.Votes.Helpful, NotRelevant: r.Votes.NotRelevant}
		}
		for _, t := range r.Symptoms {
			rv.Symptoms = append(rv.Symptoms, t.ID)
		}
		for _, t := range r.Components {
			rv.Components = append(rv.Components, t.ID)
		}
		out.Results = append(out.Results, rv)
	}
	return out
}
