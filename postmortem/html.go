package postmortem

import (
	"bytes"
	"fmt"
	"strings"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlToMarkdown converts an exported page to Markdown with the converter
// library, after taking out what export tools wrap around the page itself:
// Confluence's breadcrumbs, page metadata and footer, and Google Docs'
// styled title paragraph, which becomes a heading. It also returns the
// page's <title>.
func htmlToMarkdown(data []byte) (md []byte, title string, err error) {
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("read HTML: %w", err)
	}
	title = tidyPage(doc)
	conv := htmltomarkdown.NewConverter(htmltomarkdown.WithPlugins(
		base.NewBasePlugin(),
		commonmark.NewCommonmarkPlugin(),
		strikethrough.NewStrikethroughPlugin(),
		table.NewTablePlugin(table.WithHeaderPromotion(true), table.WithSkipEmptyRows(true)),
	))
	out, err := conv.ConvertNode(doc)
	if err != nil {
		return nil, "", fmt.Errorf("convert HTML to Markdown: %w", err)
	}
	return out, title, nil
}

// tidyPage removes export chrome from a parsed page and returns its title.
func tidyPage(doc *html.Node) string {
	var title string
	var drop []*html.Node
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		if depth > 256 {
			return
		}
		if n.Type == html.ElementNode {
			id, class := attr(n, "id"), " "+attr(n, "class")+" "
			switch {
			case n.DataAtom == atom.Title && title == "":
				title = strings.TrimSpace(textOf(n))
			case n.DataAtom == atom.Script || n.DataAtom == atom.Style || n.DataAtom == atom.Noscript:
				drop = append(drop, n)
				return
			case id == "breadcrumb-section" || id == "footer" || id == "navigation" || strings.Contains(class, " page-metadata ") ||
				strings.Contains(class, " breadcrumbs ") || strings.Contains(class, " pageSection group ") && strings.Contains(textOf(n), "Attachments:"):
				drop = append(drop, n)
				return
			case n.DataAtom == atom.P && strings.Contains(class, " title "):
				// Google Docs writes the document title as a styled paragraph.
				n.DataAtom, n.Data = atom.H1, "h1"
			case n.DataAtom == atom.P && strings.Contains(class, " subtitle "):
				n.DataAtom, n.Data = atom.H2, "h2"
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, depth+1)
		}
	}
	walk(doc, 0)
	for _, n := range drop {
		if n.Parent != nil {
			n.Parent.RemoveChild(n)
		}
	}
	return title
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		if depth > 256 {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return strings.Join(strings.Fields(b.String()), " ")
}
