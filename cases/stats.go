package cases

import (
	"strings"
)

// LibraryStats counts a library's cases by tag, for curating it.
type LibraryStats struct {
	Cases     int
	Orgs      int
	Korean    int // cases with a Korean title and summary
	FirstYear string
	LastYear  string
	PerTag    map[Kind]map[string]int // kind -> id -> cases carrying it
	Unused    map[Kind][]string       // taxonomy ids no case carries, in taxonomy order
}

// Stats counts the cases of a library per tag and lists the taxonomy's ids
// that no case uses.
func Stats(lib *Library, tax *Taxonomy) LibraryStats {
	st := LibraryStats{Cases: lib.Len(), PerTag: map[Kind]map[string]int{}, Unused: map[Kind][]string{}}
	orgs := map[string]bool{}
	kinds := []Kind{KindSymptom, KindComponent, KindRootCause, KindContributing}
	for _, k := range kinds {
		st.PerTag[k] = map[string]int{}
	}
	for _, c := range lib.Cases() {
		orgs[strings.ToLower(c.Org)] = true
		if c.Title.Ko != "" && c.Summary.Ko != "" {
			st.Korean++
		}
		if y := c.Date; len(y) >= 4 {
			if st.FirstYear == "" || y[:4] < st.FirstYear {
				st.FirstYear = y[:4]
			}
			if y[:4] > st.LastYear {
				st.LastYear = y[:4]
			}
		}
		lists := map[Kind][]string{KindSymptom: c.Symptoms, KindComponent: c.Components, KindContributing: c.Contributing}
		if c.RootCause != "" {
			lists[KindRootCause] = []string{c.RootCause}
		}
		for k, ids := range lists {
			for _, id := range ids {
				st.PerTag[k][id]++
			}
		}
	}
	st.Orgs = len(orgs)
	for _, k := range kinds {
		for _, t := range tax.Tags(k) {
			if st.PerTag[k][t.ID] == 0 {
				st.Unused[k] = append(st.Unused[k], t.ID)
			}
		}
	}
	return st
}
