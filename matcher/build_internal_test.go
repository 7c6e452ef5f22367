package matcher

import (
	"testing"

	"github.com/incidentbot/incidentbot/cases"
)

// TestTrainingPanicReachesTheCaller: a small library trains its model on
// another goroutine while the index is built; a panic there must reach New's
// caller, as it did when training ran on the caller's goroutine, so that a
// bot recovering from a failed rebuild of its library keeps running.
func TestTrainingPanicReachesTheCaller(t *testing.T) {
	old := learnModel
	t.Cleanup(func() { learnModel = old })
	learnModel = func(*cases.Library, *cases.Taxonomy, string) (*model, error) {
		panic("training failed")
	}
	set, err := cases.Load("testdata/library", cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	lib, _ := cases.NewLibrary(set)
	if lib.Len() > concurrentBuild {
		t.Fatalf("%d cases: the test needs a library trained beside its index", lib.Len())
	}
	got := func() (r any) {
		defer func() { r = recover() }()
		m, err := New(lib, Options{})
		if err == nil {
			m.Close()
		}
		return nil
	}()
	if got != "training failed" {
		t.Fatalf("New's caller recovered %v, want the training's panic", got)
	}
}

// TestModelKeyFollowsMessages: the built-in messages teach the tag model, so
// a model cached beside an index must not be reused once they change, even
// when the library and the taxonomy have not.
func TestModelKeyFollowsMessages(t *testing.T) {
	set, err := cases.Load("testdata/library", cases.DefaultTaxonomy())
	if err != nil {
		t.Fatal(err)
	}
	lib, _ := cases.NewLibrary(set)
	tax := cases.DefaultTaxonomy()
	before := modelKey(lib, tax)
	old := messagesKo
	t.Cleanup(func() { messagesKo = old })
	messagesKo = append(old[:len(old):len(old)], `{"lang": "ko", "trouble": false, "style": "social", "text": "수고하셨습니다"}`+"\n"...)
	if after := modelKey(lib, tax); after == before {
		t.Errorf("model key %s unchanged by a new built-in message", after)
	}
}
