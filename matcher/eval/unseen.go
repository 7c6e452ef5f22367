package eval

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
)

// UnseenFolds is how many parts RunUnseen splits the library into.
const UnseenFolds = 5

// Fold is the part of the library, 0 to UnseenFolds-1, that RunUnseen
// leaves out when it matches queries about the case id: a hash of the id,
// so that it stays the same as cases are added.
func Fold(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % UnseenFolds)
}

// RunUnseen measures the queries as if the incidents they are about were
// not in the library, as for a team's first outage of a kind: the library
// is split into UnseenFolds parts (Fold), and a query about a case is
// matched by a matcher built, learned models included, on the other parts
// only. Chatter is spread over the parts in turn; a positive query about
// no case of the library has nothing to leave out and is not measured.
// Relevance is then only what the query shares with other cases in tags;
// no gold case is found (GoldCounts is 0). The figures of the parts are
// pooled (Pool).
func RunUnseen(ctx context.Context, lib *cases.Library, opts matcher.Options, qs []Query) (Metrics, error) {
	parts := make([][]Query, UnseenFolds)
	spread := 0
	for _, q := range qs {
		switch _, known := lib.Get(q.Case); {
		case q.Chatter():
			parts[spread%UnseenFolds] = append(parts[spread%UnseenFolds], q)
			spread++
		case known && q.Case != "":
			parts[Fold(q.Case)] = append(parts[Fold(q.Case)], q)
		}
	}
	var ms []Metrics
	for k, part := range parts {
		if len(part) == 0 {
			continue
		}
		rest := lib.Filter(func(c *cases.Case) bool { return Fold(c.ID) != k })
		m, err := matcher.New(rest, opts)
		if err != nil {
			return Metrics{}, fmt.Errorf("library without part %d: %w", k, err)
		}
		mt, err := Run(ctx, m, part)
		m.Close()
		if err != nil {
			return Metrics{}, err
		}
		ms = append(ms, mt)
	}
	return Pool(ms), nil
}
