package cases

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// pos is a 1-based line and column in a file.
type pos struct{ line, col int }

// positions maps a field path of one case ("title", "remediation[1].text")
// to where it is written: the key of an object member, the start of a list
// element.
type positions map[string]pos

// maxPathDepth bounds how deep field paths are recorded; the format is
// never deeper than a few levels.
const maxPathDepth = 8

// locate fills in a problem's line and column from the path of its field:
// the field itself, else the nearest enclosing field that is written, else
// the start of the case.
func (ps positions) locate(p *Problem, start pos) {
	if p.Line > 0 {
		return
	}
	for f := p.Field; f != ""; f = parentPath(f) {
		if at, ok := ps[f]; ok {
			p.Line, p.Column = at.line, at.col
			return
		}
	}
	p.Line, p.Column = start.line, 0
}

// parentPath returns the path one level up: "a[1].b" -> "a[1]" -> "a" -> "".
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// jsonPositions records where each field of the JSON value data is written.
// data starts at byte offset base of whole, the file used for lines.
func jsonPositions(data, whole []byte, base int) positions {
	out := positions{}
	type frame struct {
		obj     bool
		wantKey bool
		key     string
		idx     int
		path    string
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(data))
	at := func(off int) pos {
		l, c := position(whole, base+off)
		return pos{l, c}
	}
	join := func(path, key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	for {
		start := int(dec.InputOffset())
		for start < len(data) && (isSpace(data[start]) || data[start] == ',' || data[start] == ':') {
			start++
		}
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.obj && top.wantKey {
			top.key, _ = tok.(string)
			top.wantKey = false
			if len(stack) <= maxPathDepth {
				out[join(top.path, top.key)] = at(start)
			}
			continue
		}
		var path string
		switch {
		case top == nil:
		case top.obj:
			path = join(top.path, top.key)
			top.wantKey = true
		default:
			path = fmt.Sprintf("%s[%d]", top.path, top.idx)
			top.idx++
			if len(stack) <= maxPathDepth {
				out[path] = at(start)
			}
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, &frame{obj: d == '{', wantKey: d == '{', path: path})
		}
	}
}

// yamlCase is where one case of a YAML file is written.
type yamlCase struct {
	start pos
	pos   positions
}

// yamlPositions records where each case of a YAML file and each of its
// fields is written: one case when the document is a mapping, one per
// element when it is a list. It reads the first document only, as the
// loader does. The file has already been read once, so it parses.
func yamlPositions(data []byte) []yamlCase {
	f, err := parser.ParseBytes(data, 0)
	if err != nil || len(f.Docs) == 0 || f.Docs[0] == nil {
		return nil
	}
	body := unwrap(f.Docs[0].Body)
	if seq, ok := body.(*ast.SequenceNode); ok {
		out := make([]yamlCase, 0, len(seq.Values))
		for _, v := range seq.Values {
			yc := yamlCase{start: nodeStart(v), pos: positions{}}
			walkYAML(unwrap(v), "", yc.pos, 0)
			out = append(out, yc)
		}
		return out
	}
	if body == nil {
		return nil
	}
	yc := yamlCase{start: nodeStart(body), pos: positions{}}
	walkYAML(body, "", yc.pos, 0)
	return []yamlCase{yc}
}

// unwrap looks through anchors and tags to the value they mark.
func unwrap(n ast.Node) ast.Node {
	for range maxPathDepth {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		default:
			return n
		}
	}
	return n
}

func tokenPos(n ast.Node) pos {
	if n == nil || n.GetToken() == nil {
		return pos{}
	}
	p := n.GetToken().Position
	return pos{p.Line, p.Column}
}

// nodeStart is where a node's text begins: for a mapping, its first key.
func nodeStart(n ast.Node) pos {
	switch v := unwrap(n).(type) {
	case *ast.MappingNode:
		if len(v.Values) > 0 {
			return tokenPos(v.Values[0].Key)
		}
	case *ast.MappingValueNode:
		return tokenPos(v.Key)
	}
	return tokenPos(n)
}

func walkYAML(n ast.Node, path string, out positions, depth int) {
	if depth > maxPathDepth {
		return
	}
	join := func(key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	member := func(mv *ast.MappingValueNode) {
		if mv == nil || mv.Key == nil {
			return
		}
		key := mv.Key.GetToken().Value
		p := join(key)
		out[p] = tokenPos(mv.Key)
		walkYAML(unwrap(mv.Value), p, out, depth+1)
	}
	switch v := n.(type) {
	case *ast.MappingNode:
		for _, mv := range v.Values {
			member(mv)
		}
	case *ast.MappingValueNode:
		member(v)
	case *ast.SequenceNode:
		for i, e := range v.Values {
			p := fmt.Sprintf("%s[%d]", path, i)
			out[p] = nodeStart(e)
			walkYAML(unwrap(e), p, out, depth+1)
		}
	}
}
