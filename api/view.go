package api

import (
	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// CaseView is a whole case in one language, with tags labelled: what
// get_incident and GET /api/v1/cases/{id} return. The case as stored, in
// both languages, is the resource incident://ID.
type CaseView struct {
	ID           string        `json:"id"`
	Language     cases.Lang    `json:"language"`
	Org          string        `json:"org"`
	Date         string        `json:"date"`
	Title        string        `json:"title"`
	Severity     string        `json:"severity,omitempty"`
	Impact       ImpactView    `json:"impact"`
	Summary      string        `json:"summary"`
	SymptomsText string        `json:"symptoms_text"`
	Trigger      string        `json:"trigger"`
	Detection    string        `json:"detection"`
	Lessons      string        `json:"lessons"`
	Symptoms     []matcher.Tag `json:"symptoms"`
	Components   []matcher.Tag `json:"components"`
	RootCause    *matcher.Tag  `json:"root_cause,omitempty"`
	Contributing []matcher.Tag `json:"contributing"`
	Remediation  []string      `json:"remediation"`
	ActionItems  []string      `json:"action_items"`
	DetectedIn   string        `json:"detected_after,omitempty"`
	ResolvedIn   string        `json:"resolved_after,omitempty"`
	Related      []RelatedView `json:"related"`
	Sources      []SourceView  `json:"sources"`
	Page         string        `json:"page,omitempty"` // the library page of the case, when a public URL is set
}

// ImpactView says who and what an incident affected, in one language.
type ImpactView struct {
	Scope  string `json:"scope"`
	Users  string `json:"users"`
	Region string `json:"region"`
}

// RelatedView is a case related to another, with the reason.
type RelatedView struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Reason string `json:"reason"`
}

// SourceView is a public write-up a case is drawn from.
type SourceView struct {
	URL  string `json:"url"`
	Kind string `json:"kind"`
}

func viewCase(lib *cases.Library, tax *cases.Taxonomy, c *cases.Case, l cases.Lang, page string) CaseView {
	tags := func(kind cases.Kind, ids []string) []matcher.Tag {
		out := []matcher.Tag{}
		for _, id := range ids {
			out = append(out, matcher.Tag{ID: id, Label: tax.Label(kind, id, l)})
		}
		return out
	}
	steps := func(ss []cases.Step) []string {
		out := []string{}
		for _, s := range ss {
			out = append(out, s.Text.In(l))
		}
		return out
	}
	v := CaseView{ID: c.ID, Language: l, Org: c.Org, Date: c.Date, Title: c.Title.In(l), Severity: c.Severity,
		Impact: ImpactView{Scope: c.Impact.Scope.In(l), Users: c.Impact.Users.In(l), Region: c.Impact.Region.In(l)}, Summary: c.Summary.In(l), SymptomsText: c.SymptomsText.In(l), Trigger: c.Trigger.In(l),
		Detection: c.Detection.In(l), Lessons: c.Lessons.In(l),
		Symptoms: tags(cases.KindSymptom, c.Symptoms), Components: tags(cases.KindComponent, c.Components),
		Contributing: tags(cases.KindContributing, c.Contributing),
		Remediation:  steps(c.Remediation), ActionItems: steps(c.ActionItems),
		Related: []RelatedView{}, Sources: []SourceView{}, Page: page}
	if c.RootCause != "" {
		v.RootCause = &matcher.Tag{ID: c.RootCause, Label: tax.Label(cases.KindRootCause, c.RootCause, l)}
	}
	if d := c.Timeline.DetectedAfter; d != nil && d.Err == nil {
		v.DetectedIn = d.String()
	}
	if d := c.Timeline.ResolvedAfter; d != nil && d.Err == nil {
		v.ResolvedIn = d.String()
	}
	for _, r := range c.Related {
		rv := RelatedView{ID: r.ID, Reason: r.Reason}
		if rc, ok := lib.Get(r.ID); ok {
			rv.Title = rc.Title.In(l)
		}
		v.Related = append(v.Related, rv)
	}
	for _, s := range c.Sources {
		v.Sources = append(v.Sources, SourceView{URL: s.URL, Kind: s.Kind})
	}
	return v
}

// Vocab is the taxonomy: the tag ids cases are labelled with, by kind.
type Vocab struct {
	Symptoms     []VocabTag `json:"symptoms"`
	Components   []VocabTag `json:"components"`
	RootCauses   []VocabTag `json:"root_causes"`
	Contributing []VocabTag `json:"contributing"`
}

// VocabTag is one taxonomy id with its label and definition in a language.
type VocabTag struct {
	ID         string `json:"id"`
	Label      string `json:"label"`
	Definition string `json:"definition"`
}

func vocab(tax *cases.Taxonomy, l cases.Lang) Vocab {
	kind := func(k cases.Kind) []VocabTag {
		out := []VocabTag{}
		for _, t := range tax.Tags(k) {
			out = append(out, VocabTag{ID: t.ID, Label: t.Label.In(l), Definition: t.Definition.In(l)})
		}
		return out
	}
	return Vocab{Symptoms: kind(cases.KindSymptom), Components: kind(cases.KindComponent),
		RootCauses: kind(cases.KindRootCause), Contributing: kind(cases.KindContributing)}
}
