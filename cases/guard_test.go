package cases_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/incidentbot/incidentbot/cases"
)

// within runs f and fails the test if it has not returned within limit, so
// a loader that blocks shows as a failure instead of a stuck run.
func within[T any](t *testing.T, limit time.Duration, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(limit):
		t.Fatalf("did not return within %v", limit)
		panic("unreachable")
	}
}

// A named pipe with a case file's name is skipped with a warning; the
// other files still load, and nothing waits on the pipe.
func TestLoadSkipsFilesThatAreNotRegular(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("testdata/load/one.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "good.json"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "x.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		set *cases.Set
		err error
	}
	r := within(t, 30*time.Second, func() result {
		s, err := cases.Load(dir, cases.DefaultTaxonomy())
		return result{s, err}
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.set.Cases) != 1 || r.set.Cases[0].ID != "load-one" {
		t.Errorf("loaded %d cases, want load-one from good.json", len(r.set.Cases))
	}
	var found bool
	for _, p := range r.set.Problems {
		if p.File == fifo && p.Severity == cases.Warning && strings.Contains(p.Msg, "named pipe") {
			found = true
		}
	}
	if !found || r.set.Errors() != 0 {
		t.Errorf("want one warning naming %s as a named pipe and no errors, got %v", fifo, r.set.Problems)
	}
	// The pipe given as the path itself is refused, not read.
	r = within(t, 30*time.Second, func() result {
		s, err := cases.Load(fifo, cases.DefaultTaxonomy())
		return result{s, err}
	})
	if r.err == nil || !strings.Contains(r.err.Error(), "not a regular file") {
		t.Errorf("Load(fifo) = %v, want a not-a-regular-file error", r.err)
	}
}

// Loading stops when its context ends.
func TestLoadContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := cases.LoadContext(ctx, "testdata/load", cases.DefaultTaxonomy())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("LoadContext with an ended context = %v, want context.Canceled", err)
	}
}

// laughs is a "billion laughs" document: levels of anchors, each aliasing
// the previous one nine times.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString(`a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	prev := "a"
	for i := 1; i < levels; i++ {
		name := string(rune('a' + i))
		fmt.Fprintf(&b, "%s: &%s [%s*%s]\n", name, name, strings.Repeat("*"+prev+",", 8), prev)
		prev = name
	}
	return b.String()
}

// nested opens depth collections of the given kind around a scalar.
func nested(depth int, kind string) string {
	switch kind {
	case "flow":
		return strings.Repeat("[", depth) + "x" + strings.Repeat("]", depth)
	case "flow-map":
		return strings.Repeat("{a: ", depth) + "x" + strings.Repeat("}", depth)
	case "block-seq":
		return strings.Repeat("- ", depth) + "x\n"
	}
	var b strings.Builder // block mapping, indented
	for i := range depth {
		fmt.Fprintf(&b, "%sk:\n", strings.Repeat(" ", i))
	}
	return b.String()
}

// parseCost parses data as a YAML file and returns its problems and the
// bytes it allocated.
func parseCost(data string) cost {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, probs := cases.Parse("bomb.yaml", []byte(data))
	runtime.ReadMemStats(&after)
	return cost{probs, after.TotalAlloc - before.TotalAlloc}
}

type cost struct {
	probs []cases.Problem
	alloc uint64
}

func hasProblem(probs []cases.Problem, substr string) bool {
	for _, p := range probs {
		if strings.Contains(p.Msg, substr) {
			return true
		}
	}
	return false
}

// Hostile YAML is refused with a clear problem, quickly and in little
// memory: a 400-byte billion laughs and 100k-deep nesting once took the
// process down.
func TestYAMLBombsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"billion laughs", laughs(9), "aliases expand"},
		{"flow sequences 100k deep", nested(100_000, "flow"), "nests deeper than"},
		{"flow sequences 20k deep", nested(20_000, "flow"), "nests deeper than"},
		{"flow mappings 50k deep", nested(50_000, "flow-map"), "nests deeper than"},
		{"block sequences 50k deep", nested(50_000, "block-seq"), "nests deeper than"},
		{"block mappings 2k deep", nested(2_000, "block-map"), "nests deeper than"},
		{"larger than the limit", "# " + strings.Repeat("x", cases.MaxYAMLSize), "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := within(t, time.Minute, func() cost { return parseCost(tc.doc) })
			if !hasProblem(c.probs, tc.want) {
				t.Errorf("problems %v, want one saying %q", c.probs, tc.want)
			}
			t.Logf("%d bytes of YAML: refused after allocating %d MiB", len(tc.doc), c.alloc>>20)
			if c.alloc > 256<<20 {
				t.Errorf("allocated %d MiB to refuse it, want under 256", c.alloc>>20)
			}
		})
	}
}

// The limits as a user meets them: nesting up to MaxYAMLDepth is read and
// one level more is refused; aliases that repeat a few values are read,
// aliases that multiply them past MaxYAMLExpansion times are refused.
func TestYAMLLimits(t *testing.T) {
	for _, kind := range []string{"flow", "flow-map", "block-seq", "block-map"} {
		if _, probs := cases.Parse("deep.yaml", []byte(nested(cases.MaxYAMLDepth, kind))); hasProblem(probs, "nests deeper") {
			t.Errorf("%s nesting %d deep refused: %v", kind, cases.MaxYAMLDepth, probs)
		}
		if _, probs := cases.Parse("deep.yaml", []byte(nested(cases.MaxYAMLDepth+1, kind))); !hasProblem(probs, "nests deeper") {
			t.Errorf("%s nesting %d deep not refused: %v", kind, cases.MaxYAMLDepth+1, probs)
		}
	}
	// Four levels of laughs expand about 100 written values to 7,380,
	// under 10×100 + 10,000; five levels to 66,429, over it.
	if _, probs := cases.Parse("laughs.yaml", []byte(laughs(4))); hasProblem(probs, "aliases expand") {
		t.Errorf("four levels of aliases refused: %v", probs)
	}
	if _, probs := cases.Parse("laughs.yaml", []byte(laughs(5))); !hasProblem(probs, "aliases expand") {
		t.Errorf("five levels of aliases not refused: %v", probs)
	}
	// Cases sharing text through an anchor load as if it were written out.
	doc := `- id: anchor-one
  date: 2025-02-14
  title: &title
    en: "Login failed after a certificate expired"
    ko: "인증서가 만료되어 로그인이 실패했다"
  symptoms: &symptoms [tls-handshake-failures, auth-failures]
  components: [tls-certificates]
- id: anchor-two
  date: 2025-03-01
  title: *title
  symptoms: *symptoms
  components: [tls-certificates]
`
	parsed, probs := cases.Parse("anchors.yaml", []byte(doc))
	if len(probs) != 0 || len(parsed) != 2 {
		t.Fatalf("parsed %d cases, problems %v; want 2 and none", len(parsed), probs)
	}
	if got := parsed[1].Case.Title.Ko; got != "인증서가 만료되어 로그인이 실패했다" {
		t.Errorf("aliased title = %q", got)
	}
}

// FuzzYAMLLoader feeds the YAML loader aliases, anchors and nesting: it
// must never panic, must explain what it refuses, and must not spend more
// than a bounded amount of memory per byte of input.
func FuzzYAMLLoader(f *testing.F) {
	for _, name := range []string{"testdata/load/nested/hand.yaml", "testdata/load/nested/list.yml", "testdata/load/nested/broken.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{laughs(3), laughs(9), nested(cases.MaxYAMLDepth, "flow"), nested(cases.MaxYAMLDepth+1, "block-map"),
		nested(200, "block-seq"), "a: &a [*a]\n", "- &x {k: *x}\n", "a: &a b\nc: *a\nd: &a [*a, *a]\ne: *a\n",
		"<<: *missing\n", "a: !!binary &b x\nb: *b\n", "? &k [1]\n: *k\n", "--- &a [1]\n--- *a\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := parseCost(string(data))
		for _, p := range c.probs {
			if p.Msg == "" {
				t.Errorf("problem without a message: %+v", p)
			}
		}
		if limit := uint64(64<<20 + 1024*len(data)); c.alloc > limit {
			t.Errorf("%d bytes of YAML allocated %d MiB, over %d MiB", len(data), c.alloc>>20, limit>>20)
		}
	})
}
