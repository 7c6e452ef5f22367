package main

import (
	"strings"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
)

// TestShowMarksProvenance: show tells what the organisation stated from
// what the case writer suggested or pieced together, and what kind of
// source each link is.
func TestShowMarksProvenance(t *testing.T) {
	c := &cases.Case{ID: "acme-2025-01-02", Org: "Acme", Title: cases.Text{En: "Cache stampede", Ko: "캐시 스탬피드"},
		SymptomsText:     cases.Text{En: "Hit ratio fell to zero.", Ko: "적중률이 0으로 떨어졌다."},
		SymptomsTextKind: cases.SymptomsReconstructed,
		Remediation: []cases.Step{
			{Text: cases.Text{En: "Restarted the cache tier"}, Provenance: cases.Stated},
			{Text: cases.Text{En: "Add jitter to cache expiry"}, Provenance: cases.Suggested},
		},
		Sources: []cases.Source{{URL: "https://example.com/pm", Kind: "official-postmortem", Report: cases.ReportFinal}}}
	var en, ko strings.Builder
	printCase(&en, cases.DefaultTaxonomy(), c, cases.English)
	printCase(&ko, cases.DefaultTaxonomy(), c, cases.Korean)
	for _, want := range []string{
		"  - Restarted the cache tier\n",
		"  - (suggested, not stated by them) Add jitter to cache expiry\n",
		"What responders saw (pieced together from the write-up)",
		"https://example.com/pm (official-postmortem, final report)",
	} {
		if !strings.Contains(en.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, en.String())
		}
	}
	for _, want := range []string{"(제안, 당사자가 밝힌 것 아님)", "보고서 내용으로 재구성", "최종 보고서"} {
		if !strings.Contains(ko.String(), want) {
			t.Errorf("show --lang ko lacks %q:\n%s", want, ko.String())
		}
	}
}
