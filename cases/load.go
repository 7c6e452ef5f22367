package cases

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
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
	Skipped  []Skip // files and directories of a directory that were not read
}

// Skip is a file or directory the loader passed over, and why.
type Skip struct {
	File   string
	Reason string
}

// postmortemExts are endings of documents that cases import turns into cases.
var postmortemExts = []string{".md", ".markdown", ".html", ".htm", ".txt"}

// skipReason says why a file that is not a case file is not read.
func skipReason(name string) string {
	if slices.Contains(postmortemExts, strings.ToLower(path.Ext(name))) {
		return "a document, not a case file: turn it into one with: incidentbot cases import " + name
	}
	return "not a case file: cases are read from .json, .jsonl, .ndjson, .yaml and .yml files"
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
	return LoadContext(context.Background(), p, tax)
}

// LoadContext is Load that stops, with ctx's error, when ctx ends.
func LoadContext(ctx context.Context, p string, tax *Taxonomy) (*Set, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("load cases: %w", err)
	}
	if !info.IsDir() {
		if !IsCaseFile(p) {
			return &Set{Name: p, Files: map[string]string{}, Skipped: []Skip{{File: p, Reason: skipReason(p)}}}, nil
		}
		data, err := readLimited(os.DirFS(filepath.Dir(p)), filepath.Base(p))
		if err != nil {
			return nil, fmt.Errorf("load cases from %s: %w", p, err)
		}
		src := &Set{Name: p, Files: map[string]string{}}
		src.addFile(p, data, tax)
		return src, nil
	}
	return loadFS(ctx, os.DirFS(p), ".", p, tax)
}

// LoadFS reads every case file below root in fsys. name labels the source and
// prefixes file names in problems.
func LoadFS(fsys fs.FS, root, name string, tax *Taxonomy) (*Set, error) {
	return loadFS(context.Background(), fsys, root, name, tax)
}

func loadFS(ctx context.Context, fsys fs.FS, root, name string, tax *Taxonomy) (*Set, error) {
	src := &Set{Name: name, Files: map[string]string{}}
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err := ctx.Err(); err != nil {
			return err
		}
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
				src.Skipped = append(src.Skipped, Skip{File: display, Reason: "hidden directory"})
				return fs.SkipDir
			}
			return nil
		}
		if !IsCaseFile(p) {
			src.Skipped = append(src.Skipped, Skip{File: display, Reason: skipReason(display)})
			return nil
		}
		data, err := readLimited(fsys, p)
		if errors.Is(err, errNotRegular) {
			src.Problems = append(src.Problems, Problem{Severity: Warning, File: display, Msg: err.Error()})
			return nil
		}
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

// LoadBytes reads cases held in memory, such as rows of a database, as
// Load reads files: each key of files is a name whose ending (.json, .yaml,
// ...) picks the format, and which problems and Set.Files give as
// name/key. name labels the set.
func LoadBytes(name string, files map[string][]byte, tax *Taxonomy) *Set {
	src := &Set{Name: name, Files: map[string]string{}}
	for _, key := range slices.Sorted(maps.Keys(files)) {
		src.addFile(path.Join(name, key), files[key], tax)
	}
	return src
}

// errNotRegular is returned for a case file name that is a named pipe, a
// device or a socket: reading one could block forever or never end.
var errNotRegular = errors.New("not a regular file, skipped: case files must be plain files")

// readLimited reads a regular file of at most MaxFileSize bytes. It checks
// the file's type before opening it, since opening a named pipe blocks.
func readLimited(fsys fs.FS, name string) ([]byte, error) {
	info, err := fs.Stat(fsys, name) // follows symbolic links
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%s)", errNotRegular, fileKind(info.Mode()))
	}
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

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// addFile parses one file and adds its valid cases to the source.
func (s *Set) addFile(file string, data []byte, tax *Taxonomy) {
	parsed, problems := Parse(file, data)
	var fileProbs []Problem
	fileProbs = append(fileProbs, problems...)
	for _, pc := range parsed {
		ps := slices.Clone(pc.Problems)
		for _, vp := range Validate(pc.Case, tax) {
			if slices.ContainsFunc(pc.Problems, func(p Problem) bool {
				return p.Severity == Error && (p.Field == vp.Field || strings.HasPrefix(p.Field, vp.Field+".") || strings.HasPrefix(p.Field, vp.Field+"["))
			}) {
				continue // the field could not be read; that is already said
			}
			vp.File = file
			pc.locate(&vp)
			ps = append(ps, vp)
		}
		if prev, dup := s.Files[pc.Case.ID]; dup && pc.Case.ID != "" {
			p := Problem{Severity: Error, File: file, CaseID: pc.Case.ID, Field: "id",
				Msg: fmt.Sprintf("duplicate id: also defined in %s; give one of them another id", prev)}
			pc.locate(&p)
			ps = append(ps, p)
		}
		bad := slices.ContainsFunc(ps, func(p Problem) bool { return p.Severity == Error })
		fileProbs = append(fileProbs, ps...)
		if !bad {
			s.Cases = append(s.Cases, pc.Case)
			s.Files[pc.Case.ID] = file
		}
	}
	slices.SortStableFunc(fileProbs, func(a, b Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	s.Problems = append(s.Problems, fileProbs...)
}

// Parsed is a case as read from a file, with the line it starts on and the
// problems found while reading it. A case with a problem of severity Error
// must not be used.
type Parsed struct {
	Case     *Case
	Line     int
	Problems []Problem

	idx   int // index of the case in its file
	start pos
	pos   positions
	// The JSON the case was decoded from, the file it is part of and its
	// offset there: where pos is found, the first time a problem needs
	// it (most cases have none, and finding every field's place costs
	// as much as decoding).
	raw, whole []byte
	base       int
}

// locate fills in a problem's line and column from its field.
func (pc *Parsed) locate(p *Problem) {
	if pc.pos == nil && pc.raw != nil && p.Line == 0 {
		pc.pos = jsonPositions(pc.raw, pc.whole, pc.base)
	}
	pc.pos.locate(p, pc.start)
}

// Parse reads the cases in one file's contents: a JSON object, a JSON array of
// objects, JSON lines, or YAML (one case or a list), chosen by the file name's
// ending. It never panics. Problems that concern one case (every wrong value
// and unknown field of it, each with its line and column) are in that case's
// Parsed; problems with the file as a whole, or with an element that is not a
// case object, are returned beside. One bad case in an array, a list or a
// JSON-lines file does not stop the others.
func Parse(file string, data []byte) ([]Parsed, []Problem) {
	parsed, probs := parse(file, data)
	var out []Parsed
	for _, pc := range parsed {
		if pc.Case == nil {
			probs = append(probs, pc.Problems...)
			continue
		}
		out = append(out, pc)
	}
	return out, probs
}

func parse(file string, data []byte) ([]Parsed, []Problem) {
	fail := func(line, col int, field, msg string) []Problem {
		return []Problem{{Severity: Error, File: file, Line: line, Column: col, Field: field, Msg: msg}}
	}
	if !utf8.Valid(data) {
		return nil, fail(0, 0, "", "file is not UTF-8 text: save it as UTF-8")
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	switch strings.ToLower(path.Ext(file)) {
	case ".yaml", ".yml":
		if err := checkYAML(data); err != nil {
			return nil, fail(0, 0, "", err.Error())
		}
		js, err := yamlToJSON(data)
		if err != nil {
			var ye yaml.Error
			if errors.As(err, &ye) && ye.GetToken() != nil {
				pos := ye.GetToken().Position
				return nil, fail(pos.Line, pos.Column, "", "invalid YAML: "+ye.GetMessage())
			}
			return nil, fail(0, 0, "", "invalid YAML: "+err.Error())
		}
		// Line numbers in YAML files refer to the YAML, not the JSON made
		// from it: place every problem again by its field.
		cs, ps := parseJSON(file, js)
		for i := range ps {
			ps[i].Line, ps[i].Column = 0, 0
		}
		ycs := yamlPositions(data)
		for i := range cs {
			pc := &cs[i]
			pc.pos, pc.start, pc.Line = positions{}, pos{}, 0
			if pc.idx < len(ycs) {
				pc.pos, pc.start, pc.Line = ycs[pc.idx].pos, ycs[pc.idx].start, ycs[pc.idx].start.line
			}
			for j := range pc.Problems {
				pc.Problems[j].Line, pc.Problems[j].Column = 0, 0
				pc.locate(&pc.Problems[j])
			}
		}
		return cs, ps
	case ".jsonl", ".ndjson":
		var out []Parsed
		rest, off := data, 0
		for n := 1; len(rest) > 0; n++ {
			raw, after, _ := bytes.Cut(rest, []byte("\n"))
			lineStart := off
			off += len(raw) + 1
			rest = after
			line := bytes.TrimSpace(raw)
			if len(line) == 0 {
				continue
			}
			lead := bytes.Index(raw, line)
			pc := decodeCase(file, line, data, lineStart+lead)
			pc.idx = n - 1
			out = append(out, pc)
		}
		return out, nil
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
		return []Parsed{decodeCase(file, data, data, 0)}, nil
	}
	// An array: decode element by element so one bad case does not hide the rest.
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, []Problem{jsonProblem(file, data, 0, err)}
	}
	var out []Parsed
	var probs []Problem
	for i := 0; dec.More(); i++ {
		start := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return out, append(probs, jsonProblem(file, data, 0, err))
		}
		// InputOffset is where the previous value ended; skip to this one.
		for start < len(data) && (data[start] == ',' || isSpace(data[start])) {
			start++
		}
		pc := decodeCase(file, raw, data, start)
		pc.idx = i
		out = append(out, pc)
	}
	if _, err := dec.Token(); err != nil {
		probs = append(probs, jsonProblem(file, data, 0, err))
	}
	return out, probs
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// decodeCase decodes one case object; whole is the file it is part of and
// base its offset there, for lines and columns. The result has a nil Case
// when data is not a case object at all.
func decodeCase(file string, data, whole []byte, base int) Parsed {
	l, c := position(whole, base)
	pc := Parsed{Line: l, start: pos{l, c}}
	// One pass of encoding/json both checks the syntax (every error but
	// a syntax error is decodeLenient's to report) and reads the object.
	var obj map[string]json.RawMessage
	err := json.Unmarshal(data, &obj)
	if syn, ok := err.(*json.SyntaxError); ok {
		pc.Problems = []Problem{jsonProblem(file, whole, base, syn)}
		return pc
	}
	pc.raw, pc.whole, pc.base = data, whole, base
	pc.Case, pc.Problems = decodeLenient(data, obj, err)
	for i := range pc.Problems {
		pc.Problems[i].File = file
		pc.locate(&pc.Problems[i])
	}
	return pc
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
