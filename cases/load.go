package cases

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
)

// Severity says whether a problem keeps a case out of the library.
type Severity int

const (
	// Warning problems are reported; the case still loads.
	Warning Severity = iota
	// Error problems keep the case (or, for a file that does not parse, the
	// whole file) out of the library.
	Error
)

func (s Severity) String() string {
	if s == Error {
		return "error"
	}
	return "warning"
}

// Problem is something wrong with a case file, located as precisely as the
// loader can: file, line and column, case id and field.
type Problem struct {
	Severity Severity
	File     string
	Line     int // 1-based; 0 when unknown
	Column   int // 1-based; 0 when unknown
	CaseID   string
	Field    string
	Msg      string // what is wrong and what to do
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ":%d", p.Column)
		}
	}
	fmt.Fprintf(&b, ": %s: ", p.Severity)
	if p.CaseID != "" {
		fmt.Fprintf(&b, "case %s: ", p.CaseID)
	}
	if p.Field != "" {
		fmt.Fprintf(&b, "%s: ", p.Field)
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Set is the cases read from one place (the built-in library, a file, a
// directory) with the problems found in them. Cases with errors are left out
// of Cases.
type Set struct {
	Name     string
	Cases    []*Case
	Files    map[string]string // case id -> file it came from
	Problems []Problem
}

// Errors counts the source's problems of severity Error.
func (s *Set) Errors() int {
	n := 0
	for _, p := range s.Problems {
		if p.Severity == Error {
			n++
		}
	}
	return n
}

// MaxFileSize is the largest case file read; larger files are reported and
// skipped rather than read into memory.
const MaxFileSize = 64 << 20

// caseExts are the file name endings the loader reads.
var caseExts = []string{".json", ".jsonl", ".ndjson", ".yaml", ".yml"}

// IsCaseFile reports whether name has an ending the loader reads.
func IsCaseFile(name string) bool {
	return slices.Contains(caseExts, strings.ToLower(path.Ext(name)))
}

// Load reads cases from a file or, recursively, from a directory on disk.
// Problems are reported in the result; the error is only for a path that
// cannot be read at all.
func Load(p string, tax *Taxonomy) (*Set, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("load cases: %w", err)
	}
	if !info.IsDir() {
		data, err := readLimited(os.DirFS(filepath.Dir(p)), filepath.Base(p))
		if err != nil {
			return nil, fmt.Errorf("load cases: %w", err)
		}
		src := &Set{Name: p, Files: map[string]string{}}
		src.addFile(p, data, tax)
		return src, nil
	}
	return LoadFS(os.DirFS(p), ".", p, tax)
}

// LoadFS reads every case file below root in fsys. name labels the source and
// prefixes file names in problems.
func LoadFS(fsys fs.FS, root, name string, tax *Taxonomy) (*Set, error) {
	src := &Set{Name: name, Files: map[string]string{}}
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		rel := p
		if root != "." {
			rel = strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		}
		display := filepath.Join(name, filepath.FromSlash(rel))
		if err != nil {
			src.Problems = append(src.Problems, Problem{Severity: Error, File: display, Msg: fmt.Sprintf("cannot read: %v", err)})
			if d != nil && d.IsDir() && p != root {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p != root && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if !IsCaseFile(p) {
			return nil
		}
		data, err := readLimited(fsys, p)
		if err != nil {
			src.Problems = append(src.Problems, Problem{Severity: Error, File: display, Msg: err.Error()})
			return nil
		}
		src.addFile(display, data, tax)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load cases from %s: %w", name, err)
	}
	return src, nil
}

func readLimited(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("file is larger than %d MiB: split it into smaller files", MaxFileSize>>20)
	}
	return data, nil
}

// addFile parses one file and adds its valid cases to the source.
func (s *Set) addFile(file string, data []byte, tax *Taxonomy) {
	parsed, problems := Parse(file, data)
	s.Problems = append(s.Problems, problems...)
	for _, pc := range parsed {
		ps := Validate(pc.Case, tax)
		bad := false
		for i := range ps {
			ps[i].File = file
			if ps[i].Line == 0 {
				ps[i].Line = pc.Line
			}
			bad = bad || ps[i].Severity == Error
		}
		if prev, dup := s.Files[pc.Case.ID]; dup && pc.Case.ID != "" {
			ps = append(ps, Problem{Severity: Error, File: file, Line: pc.Line, CaseID: pc.Case.ID, Field: "id",
				Msg: fmt.Sprintf("duplicate id: also defined in %s; give one of them another id", prev)})
			bad = true
		}
		s.Problems = append(s.Problems, ps...)
		if !bad {
			s.Cases = append(s.Cases, pc.Case)
			s.Files[pc.Case.ID] = file
		}
	}
}

// Parsed is a case as read from a file, with the line it starts on.
type Parsed struct {
	Case *Case
	Line int
}

// Parse reads the cases in one file's contents: a JSON object, a JSON array of
// objects, JSON lines, or YAML (one case or a list), chosen by the file name's
// ending. It never panics; what it cannot read it reports as problems, and
// one bad case in an array or JSON-lines file does not stop the others.
func Parse(file string, data []byte) ([]Parsed, []Problem) {
	fail := func(line, col int, field, msg string) []Problem {
		return []Problem{{Severity: Error, File: file, Line: line, Column: col, Field: field, Msg: msg}}
	}
	if !utf8.Valid(data) {
		return nil, fail(0, 0, "", "file is not UTF-8 text: save it as UTF-8")
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	switch strings.ToLower(path.Ext(file)) {
	case ".yaml", ".yml":
		js, err := yamlToJSON(data)
		if err != nil {
			var ye yaml.Error
			if errors.As(err, &ye) && ye.GetToken() != nil {
				pos := ye.GetToken().Position
				return nil, fail(pos.Line, pos.Column, "", "invalid YAML: "+ye.GetMessage())
			}
			return nil, fail(0, 0, "", "invalid YAML: "+err.Error())
		}
		// Line numbers in YAML files refer to the YAML, not the JSON made from it.
		cs, ps := parseJSON(file, js)
		for i := range cs {
			cs[i].Line = 0
		}
		for i := range ps {
			ps[i].Line, ps[i].Column = 0, 0
		}
		return cs, ps
	case ".jsonl", ".ndjson":
		var out []Parsed
		var probs []Problem
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, MaxFileSize)
		for n := 1; sc.Scan(); n++ {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			c, p := decodeCase(file, line, line, 0)
			if p != nil {
				p.Line = n
				probs = append(probs, *p)
				continue
			}
			out = append(out, Parsed{Case: c, Line: n})
		}
		return out, probs
	default:
		return parseJSON(file, data)
	}
}

func parseJSON(file string, data []byte) ([]Parsed, []Problem) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, []Problem{{Severity: Error, File: file, Msg: "file is empty: write a case object or an array of them"}}
	}
	if trimmed[0] != '[' {
		c, p := decodeCase(file, data, data, 0)
		if p != nil {
			return nil, []Problem{*p}
		}
		return []Parsed{{Case: c, Line: 1}}, nil
	}
	// An array: decode element by element so one bad case does not hide the rest.
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, []Problem{jsonProblem(file, data, 0, err)}
	}
	var out []Parsed
	var probs []Problem
	for dec.More() {
		start := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return out, append(probs, jsonProblem(file, data, 0, err))
		}
		// InputOffset is where the previous value ended; skip to this one.
		for start < len(data) && (data[start] == ',' || isSpace(data[start])) {
			start++
		}
		c, p := decodeCase(file, raw, data, start)
		line, _ := position(data, start)
		if p != nil {
			probs = append(probs, *p)
			continue
		}
		out = append(out, Parsed{Case: c, Line: line})
	}
	if _, err := dec.Token(); err != nil {
		probs = append(probs, jsonProblem(file, data, 0, err))
	}
	return out, probs
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// decodeCase decodes one case object; whole is the file it is part of and
// base its offset there, for line numbers.
func decodeCase(file string, data, whole []byte, base int) (*Case, *Problem) {
	var c Case
	if err := json.Unmarshal(data, &c); err != nil {
		p := jsonProblem(file, whole, base, err)
		// Name the case if its id can still be read.
		var idOnly struct {
			ID any `json:"id"`
		}
		if json.Unmarshal(data, &idOnly) == nil {
			if s, ok := idOnly.ID.(string); ok {
				p.CaseID = s
			}
		}
		return nil, &p
	}
	return &c, nil
}

// jsonProblem turns a decoding error into a problem with line, column and
// field where encoding/json gives them. Offsets in err are relative to base in
// data.
func jsonProblem(file string, data []byte, base int, err error) Problem {
	p := Problem{Severity: Error, File: file}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		p.Line, p.Column = position(data, base+int(syn.Offset))
		p.Msg = "invalid JSON: " + syn.Error()
	case errors.As(err, &typ):
		p.Line, p.Column = position(data, base+int(typ.Offset))
		p.Field = typ.Field
		p.Msg = fmt.Sprintf("is a JSON %s, want %s", typ.Value, describeType(typ.Type.String()))
	case errors.Is(err, io.ErrUnexpectedEOF):
		p.Line, p.Column = position(data, len(data))
		p.Msg = "invalid JSON: the file ends in the middle of a value"
	default:
		p.Msg = "invalid JSON: " + err.Error()
	}
	return p
}

func describeType(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case t == "string", t == "*string":
		return "a string"
	case strings.HasSuffix(t, "Text"):
		return `an object {"en": "...", "ko": "..."}`
	case strings.Contains(t, "cases."):
		return "an object"
	}
	return t
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, off int) (line, col int) {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	col = off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// yamlToJSON converts YAML to JSON so that YAML cases are decoded by exactly
// the same rules (and field names) as JSON ones. Scalars that YAML would read
// as dates or numbers stay as the text that was written where a string is
// expected by the JSON decoder's error messages.
func yamlToJSON(data []byte) (js []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the YAML parser failed: %v", r)
		}
	}()
	var v any
	if err := yaml.UnmarshalWithOptions(data, &v, yaml.UseOrderedMap()); err != nil {
		return nil, err
	}
	return yaml.MarshalWithOptions(v, yaml.JSON())
}
