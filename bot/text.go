package bot

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"unicode/utf8"
)

// message is the part of a Slack message the bot reads, decoded from raw JSON
// so that no block or attachment type slack-go does not know can hide text.
type message struct {
	Type        string          `json:"type"`
	Subtype     string          `json:"subtype,omitempty"`
	User        string          `json:"user,omitempty"`
	BotID       string          `json:"bot_id,omitempty"`
	AppID       string          `json:"app_id,omitempty"`
	Text        string          `json:"text"`
	TS          string          `json:"ts"`
	ThreadTS    string          `json:"thread_ts,omitempty"`
	Channel     string          `json:"channel"`
	ChannelType string          `json:"channel_type,omitempty"`
	Hidden      bool            `json:"hidden,omitempty"`
	Blocks      json.RawMessage `json:"blocks,omitempty"`
	Attachments json.RawMessage `json:"attachments,omitempty"`
	Files       json.RawMessage `json:"files,omitempty"`
	Message     *message        `json:"message,omitempty"`
	Previous    *message        `json:"previous_message,omitempty"`
}

// maxText bounds the text the bot reads from one message.
const maxText = 40000

// Text returns all the text a message carries, in the order alert tools
// put it: the top-level text, then blocks, then attachments (pretext,
// title, text, fields, footer, their blocks), then file titles. Alert bots
// often leave the top-level text empty.
func (m *message) fullText() string {
	var parts []string
	seen := map[string]bool{}
	add := func(s string) {
		s = strings.TrimSpace(stripLinks(s))
		if s == "" || seen[s] {
			return
		}
		seen[s] = true
		parts = append(parts, s)
	}
	add(m.Text)
	walkText(m.Blocks, add)
	walkText(m.Attachments, add)
	var files []struct {
		Title string `json:"title"`
		Name  string `json:"name"`
	}
	if json.Unmarshal(m.Files, &files) == nil {
		for _, f := range files {
			add(f.Title)
		}
	}
	return cutBytes(strings.Join(parts, "\n"), maxText)
}

// cutBytes returns the longest prefix of s of at most n bytes that ends on
// a character boundary: a cut in the middle of a Korean syllable would
// leave bytes that are not UTF-8, which a database refuses to store.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// tailBytes returns the longest suffix of s of at most n bytes that starts
// on a character boundary.
func tailBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// textKeys are the JSON keys whose string values are readable text in
// blocks and attachments.
var textKeys = map[string]bool{"text": true, "title": true, "pretext": true, "value": true, "footer": true, "fallback": true, "author_name": true}

// skipKeys hold values that are never text to read: ids, URLs, styles, and
// the buttons of alert cards.
var skipKeys = map[string]bool{"action_id": true, "block_id": true, "url": true, "image_url": true, "thumb_url": true,
	"title_link": true, "author_link": true, "author_icon": true, "footer_icon": true, "style": true, "color": true,
	"actions": true, "accessory": true, "type": true, "id": true, "ts": true, "alt_text": true, "mrkdwn_in": true}

// walkText visits the text of any block or attachment structure, whatever
// its types, so unknown block kinds still give up their words.
func walkText(raw json.RawMessage, add func(string)) {
	if len(raw) == 0 {
		return
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return
	}
	var walk func(v any, key string, depth int)
	walk = func(v any, key string, depth int) {
		if depth > 12 {
			return
		}
		switch x := v.(type) {
		case string:
			if textKeys[key] {
				add(x)
			}
		case []any:
			for _, e := range x {
				walk(e, key, depth+1)
			}
		case map[string]any:
			if t, _ := x["type"].(string); interactiveTypes[t] {
				return // buttons and menus: their labels are not the alert
			}
			// Fields of attachments and sections: "title" then "value".
			for _, k := range []string{"pretext", "author_name", "title", "text", "fields", "value", "elements", "blocks", "footer", "fallback"} {
				if e, ok := x[k]; ok {
					walk(e, k, depth+1)
				}
			}
			for k, e := range x {
				if skipKeys[k] || textKeys[k] || k == "fields" || k == "elements" || k == "blocks" {
					continue
				}
				if _, isMap := e.(map[string]any); isMap {
					walk(e, k, depth+1)
				}
			}
		}
	}
	walk(v, "", 0)
}

// interactiveTypes are block and element types whose text is a control's
// label.
var interactiveTypes = map[string]bool{"actions": true, "button": true, "overflow": true, "static_select": true,
	"external_select": true, "users_select": true, "conversations_select": true, "channels_select": true,
	"datepicker": true, "timepicker": true, "checkboxes": true, "radio_buttons": true, "image": true}

var (
	slackLink = regexp.MustCompile(`<(https?://|mailto:)[^|>]*(\|([^>]*))?>`)
	bareURL   = regexp.MustCompile(`https?://\S+`)
)

// stripLinks replaces Slack links by their labels and drops bare URLs.
func stripLinks(s string) string {
	s = slackLink.ReplaceAllString(s, "$3")
	return bareURL.ReplaceAllString(s, "")
}

var (
	countPrefix = regexp.MustCompile(`(?i)\[(firing|resolved|alerting|ok|no data)(:\d+)?\]`)
	digits      = regexp.MustCompile(`\d+`)
	mention     = regexp.MustCompile(`<[@#!][^>]*>`)
)

// alertFingerprint identifies "the same alert firing again": the alert's
// first line (its name and labels) without counts, numbers and mentions.
func alertFingerprint(text string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	first = countPrefix.ReplaceAllString(first, "")
	first = mention.ReplaceAllString(first, "")
	first = digits.ReplaceAllString(first, "#")
	first = strings.Join(strings.Fields(strings.ToLower(first)), " ")
	if first == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(first))
	return hex.EncodeToString(sum[:8])
}

// stripMentions removes user, channel and special mentions from text.
func stripMentions(text string) string {
	return strings.TrimSpace(mention.ReplaceAllString(text, " "))
}
