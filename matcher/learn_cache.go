package matcher

import (
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/incidentbot/incidentbot/cases"
)

// modelVersion changes whenever training changes, so that a model cached by
// an older version is never reused.
const modelVersion = "9"

// modelKey names what a model was trained on: the library's indexed content
// (the index's own key), the taxonomy's phrases and definitions, the
// built-in messages, and the training code's version. A release whose
// messages changed never reuses a model its predecessor cached.
func modelKey(lib *cases.Library, tax *cases.Taxonomy) string {
	h := sha256.New()
	io.WriteString(h, indexKey(lib))
	for _, kind := range []cases.Kind{cases.KindSymptom, cases.KindComponent, cases.KindRootCause} {
		for _, t := range tax.Tags(kind) {
			fmt.Fprintf(h, "%s\x00%s\x00%q\x00%q\x00%s\x00%s\x00%s\x00%s\n", kind, t.ID, t.Phrases.En, t.Phrases.Ko,
				t.Label.En, t.Label.Ko, t.Definition.En, t.Definition.Ko)
		}
	}
	h.Write(messagesEn)
	h.Write(messagesKo)
	return hex.EncodeToString(h.Sum(nil))[:16] + "-v" + modelVersion
}

// loadOrLearn trains the tag model, or, when dir is set, reads the one cached
// there for the same library and taxonomy. A cache that cannot be read is
// retrained and rewritten; failing to write it is not an error (the next
// start trains again).
func loadOrLearn(lib *cases.Library, tax *cases.Taxonomy, dir string) (*model, error) {
	if dir == "" {
		return learn(lib, tax), nil
	}
	name := "model-" + modelKey(lib, tax) + ".gob"
	path := filepath.Join(dir, name)
	if f, err := os.Open(path); err == nil {
		var m model
		err := gob.NewDecoder(f).Decode(&m)
		f.Close()
		if err == nil && m.valid() {
			return &m, nil
		}
	}
	m := learn(lib, tax)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return m, nil
	}
	tmp, err := os.CreateTemp(dir, "model-*.tmp")
	if err != nil {
		return m, nil
	}
	defer os.Remove(tmp.Name())
	if err := gob.NewEncoder(tmp).Encode(m); err != nil {
		tmp.Close()
		return m, nil
	}
	if err := tmp.Close(); err != nil {
		return m, nil
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return m, nil
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "model-") && strings.HasSuffix(e.Name(), ".gob") && e.Name() != name {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	return m, nil
}

// valid reports whether a decoded model is whole: a damaged cache file must
// be retrained, never trusted.
func (m *model) valid() bool {
	t := len(m.Tags)
	if t == 0 || len(m.B) != t || len(m.Theta) != t || len(m.W) != len(m.Vocab)*t {
		return false
	}
	for _, id := range m.Vocab {
		if id < 0 || int(id) >= len(m.Vocab) {
			return false
		}
	}
	if len(m.TroubleW) != len(m.TroubleVocab) {
		return false
	}
	for _, id := range m.TroubleVocab {
		if id < 0 || int(id) >= len(m.TroubleW) {
			return false
		}
	}
	return m.Also == nil || m.Also.valid()
}
