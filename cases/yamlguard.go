package cases

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Limits on a YAML case file, checked before it is parsed into values. The
// YAML parser has no bounds of its own: a few hundred bytes of nested
// aliases expand to billions of values, and deep nesting costs memory that
// grows with the square of the depth.
const (
	// MaxYAMLSize is the largest YAML case file read.
	MaxYAMLSize = 8 << 20
	// MaxYAMLDepth is how deeply collections may nest. A case needs 4.
	MaxYAMLDepth = 64
	// MaxYAMLExpansion is how many times its written values aliases may
	// expand a file to (plus yamlExpansionSlack values).
	MaxYAMLExpansion   = 10
	yamlExpansionSlack = 10_000
)

// checkYAML refuses a YAML file that is too large, too deep, or whose
// aliases expand it too far, with a message that says which. The depth is
// read from the tokens, so nothing deep is ever parsed; aliases are counted
// on the parsed tree, where they are not yet expanded.
func checkYAML(data []byte) error {
	if len(data) > MaxYAMLSize {
		return fmt.Errorf("YAML file is larger than %d MiB: split it into smaller files or write it as JSON", MaxYAMLSize>>20)
	}
	tokens := lexer.Tokenize(string(data))
	depth, aliases := 0, false
	flow := 0       // open [ and {
	var block []int // columns of the open block collections
	for _, tk := range tokens {
		col := 0
		if tk.Position != nil {
			col = tk.Position.Column
		}
		switch tk.Type {
		case token.DocumentHeaderType, token.DocumentEndType:
			flow, block = 0, block[:0]
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		case token.AliasType:
			aliases = true
		case token.SequenceEntryType, token.MappingKeyType:
			if flow == 0 {
				block = openBlock(block, col)
			}
		default:
			if flow == 0 && tk.Next != nil && tk.Next.Type == token.MappingValueType {
				block = openBlock(block, col) // a key of a block mapping
			}
		}
		if d := len(block) + flow; d > depth {
			depth = d
			if depth > MaxYAMLDepth {
				return fmt.Errorf("YAML nests deeper than %d levels (line %d): a case needs only a few", MaxYAMLDepth, tk.Position.Line)
			}
		}
	}
	if !aliases {
		return nil
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		return nil // the decoder reports it, with its position
	}
	c := aliasCounter{anchors: map[string]int{}}
	for _, doc := range f.Docs {
		c.count(doc)
	}
	if limit := MaxYAMLExpansion*c.written + yamlExpansionSlack; c.expanded > limit {
		return fmt.Errorf("YAML aliases expand %d written values to more than %d: write the repeated parts out, or use fewer nested aliases", c.written, limit)
	}
	return nil
}

// openBlock records a block collection entry at col: entries at a greater
// column than the innermost open one nest in it, and a lesser column closes
// the ones it is left of.
func openBlock(block []int, col int) []int {
	for len(block) > 0 && block[len(block)-1] > col {
		block = block[:len(block)-1]
	}
	if len(block) == 0 || block[len(block)-1] < col {
		block = append(block, col)
	}
	return block
}

// aliasCounter counts the values of a YAML tree as written and as they are
// once every alias is replaced by what its anchor names.
type aliasCounter struct {
	anchors  map[string]int // anchor name -> values it expands to
	written  int
	expanded int
}

// count returns the values n expands to, adding them up as it goes. An alias
// refers to the last anchor of that name before it, as the decoder resolves
// it.
func (c *aliasCounter) count(n ast.Node) int {
	const ceiling = 1 << 40 // saturate instead of overflowing
	sum := func(ns ...ast.Node) int {
		total := 1
		for _, n := range ns {
			total = min(total+c.count(n), ceiling)
		}
		return total
	}
	var size int
	switch n := n.(type) {
	case nil:
		return 0
	case *ast.DocumentNode:
		return c.count(n.Body)
	case *ast.AnchorNode:
		size = c.count(n.Value)
		if name := n.Name; name != nil && name.GetToken() != nil {
			c.anchors[name.GetToken().Value] = size
		}
		return size
	case *ast.AliasNode:
		size = 1
		if name := n.Value; name != nil && name.GetToken() != nil {
			size = max(c.anchors[name.GetToken().Value], 1)
		}
		c.written++
		c.expanded = min(c.expanded+size, ceiling)
		return size
	case *ast.TagNode:
		return c.count(n.Value)
	case *ast.MappingNode:
		ns := make([]ast.Node, len(n.Values))
		for i, v := range n.Values {
			ns[i] = v
		}
		size = sum(ns...)
	case *ast.MappingValueNode:
		size = sum(n.Key, n.Value)
	case *ast.MappingKeyNode:
		size = sum(n.Value)
	case *ast.SequenceNode:
		size = sum(n.Values...)
	default:
		size = 1
	}
	c.written++
	c.expanded = min(c.expanded+1, ceiling)
	return size
}
