package main

import (
	"testing"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// TestSignalListSaysWhereATagCameFrom: a tag the text's words gave quotes
// them; one the nearest cases voted says so in the answer's language, not
// in English inside a Korean answer.
func TestSignalListSaysWhereATagCameFrom(t *testing.T) {
	tax := cases.DefaultTaxonomy()
	sigs := []matcher.Signal{
		{Kind: cases.KindSymptom, ID: "auth-failures", Phrase: "로그인 못", Weight: 0.9},
		{Kind: cases.KindSymptom, ID: "data-inconsistency", Phrase: matcher.VotedPhrase, Weight: 0.7},
	}
	for _, tc := range []struct {
		lang cases.Lang
		want string
	}{
		{cases.English, tax.Label(cases.KindSymptom, "auth-failures", cases.English) + ` ("로그인 못"), ` +
			tax.Label(cases.KindSymptom, "data-inconsistency", cases.English) + " (similar cases)"},
		{cases.Korean, tax.Label(cases.KindSymptom, "auth-failures", cases.Korean) + ` ("로그인 못"), ` +
			tax.Label(cases.KindSymptom, "data-inconsistency", cases.Korean) + " (비슷한 사례)"},
	} {
		if got := signalList(tax, cases.KindSymptom, sigs, tc.lang); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.lang, got, tc.want)
		}
	}
}
