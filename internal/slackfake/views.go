package slackfake

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Modals: views.open takes a trigger_id that works once and only for a
// short while after the user acted (3 s at Slack); views.update replaces an
// open view; SubmitView sends the view_submission Slack sends when the user
// presses the modal's submit button.

// WithTriggerTTL sets how long a trigger_id given in an envelope can open a
// view (default 3s, as at Slack).
func WithTriggerTTL(d time.Duration) Option {
	return func(c *config) { c.triggerTTL = d }
}

// WithClock sets the clock trigger_ids are issued and checked by, so that a
// test can move past the trigger window without waiting (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}

// trigger is an issued trigger_id.
type trigger struct {
	at   time.Time
	used bool
}

// View returns the view with the given id as it is now (after any
// views.update), or nil.
func (s *Server) View(id string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := s.views[id]; v != nil {
		return clone(v)
	}
	return nil
}

// ViewIDs returns the ids of the views opened so far, oldest first.
func (s *Server) ViewIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.viewOrder)
}

// WaitView waits for a view for which match returns true, given the view
// as it is now and its place among the views opened (0 for the first), and
// returns it. match must not call the Server.
func (s *Server) WaitView(ctx context.Context, match func(i int, v map[string]any) bool) (map[string]any, error) {
	var found map[string]any
	err := s.wait(ctx, func() bool {
		for i, id := range s.viewOrder {
			if v := s.views[id]; match(i, v) {
				found = clone(v)
				return true
			}
		}
		return false
	})
	return found, err
}

// clone deep-copies JSON-shaped data.
func clone(v map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// viewsOpen opens a modal for a fresh, unused trigger_id.
func (s *Server) viewsOpen(c *Call) (reply, string) {
	view, _ := c.JSON["view"].(map[string]any)
	tid, _ := c.JSON["trigger_id"].(string)
	if c.Form != nil {
		tid = c.Form.Get("trigger_id")
		_ = json.Unmarshal([]byte(c.Form.Get("view")), &view)
	}
	if tid == "" || view == nil {
		return nil, "invalid_arguments"
	}
	if msgs := validateView(view); len(msgs) > 0 {
		return reply{"response_metadata": reply{"messages": msgs}}, "invalid_arguments"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tr, ok := s.triggers[tid]
	switch {
	case !ok:
		return nil, "invalid_trigger_id"
	case tr.used:
		return nil, "exchanged_trigger_id"
	case s.cfg.now().Sub(tr.at) > s.cfg.triggerTTL:
		return nil, "expired_trigger_id"
	}
	tr.used = true
	return reply{"view": s.storeViewLocked(s.nextIDLocked("V"), view)}, ""
}

// viewsUpdate replaces an open view, by view_id or external_id; a hash
// that is not the view's current one answers hash_conflict.
func (s *Server) viewsUpdate(c *Call) (reply, string) {
	view, _ := c.JSON["view"].(map[string]any)
	id, _ := c.JSON["view_id"].(string)
	ext, _ := c.JSON["external_id"].(string)
	hash, _ := c.JSON["hash"].(string)
	if c.Form != nil {
		id, ext, hash = c.Form.Get("view_id"), c.Form.Get("external_id"), c.Form.Get("hash")
		_ = json.Unmarshal([]byte(c.Form.Get("view")), &view)
	}
	if view == nil || id == "" && ext == "" {
		return nil, "invalid_arguments"
	}
	if msgs := validateView(view); len(msgs) > 0 {
		return reply{"response_metadata": reply{"messages": msgs}}, "invalid_arguments"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" {
		for vid, v := range s.views {
			if v["external_id"] == ext {
				id = vid
			}
		}
	}
	old := s.views[id]
	switch {
	case old == nil:
		return nil, "not_found"
	case hash != "" && hash != old["hash"]:
		return nil, "hash_conflict"
	}
	return reply{"view": s.storeViewLocked(id, view)}, ""
}

// storeViewLocked keeps view under id with the fields Slack adds, and
// returns a copy.
func (s *Server) storeViewLocked(id string, view map[string]any) map[string]any {
	v := clone(view)
	v["id"], v["team_id"], v["app_id"], v["bot_id"] = id, s.cfg.id.TeamID, s.cfg.id.AppID, s.cfg.id.BotID
	v["hash"] = s.nextIDLocked("hash-")
	v["root_view_id"], v["previous_view_id"] = id, nil
	v["state"] = map[string]any{"values": map[string]any{}}
	for _, k := range []string{"private_metadata", "callback_id", "external_id"} {
		if _, ok := v[k]; !ok {
			v[k] = ""
		}
	}
	if _, ok := s.views[id]; !ok {
		s.viewOrder = append(s.viewOrder, id)
	}
	s.views[id] = v
	s.notifyLocked()
	return clone(v)
}

// ViewValues are the values of a view's inputs as a view_submission carries
// them: block_id, then action_id, then the element's state.
type ViewValues map[string]map[string]map[string]any

// SetText sets the text typed in the block's plain_text_input.
func (v ViewValues) SetText(blockID, text string) {
	for _, st := range v[blockID] {
		st["value"] = text
	}
}

// Select sets the option(s) picked in the block's select or checkboxes, by
// value.
func (v ViewValues) Select(blockID string, values ...string) {
	for _, st := range v[blockID] {
		var opts []any
		for _, val := range values {
			opts = append(opts, map[string]any{"text": map[string]any{"type": "plain_text", "text": val}, "value": val})
		}
		if st["type"] == "static_select" {
			st["selected_option"] = nil
			if len(opts) > 0 {
				st["selected_option"] = opts[0]
			}
			continue
		}
		if opts == nil {
			opts = []any{}
		}
		st["selected_options"] = opts
	}
}

// initialValues are a view's input values as the user sees them before
// changing anything.
func initialValues(view map[string]any) ViewValues {
	out := ViewValues{}
	blocks, _ := view["blocks"].([]any)
	for _, b := range blocks {
		bm, _ := b.(map[string]any)
		if bm["type"] != "input" {
			continue
		}
		el, _ := bm["element"].(map[string]any)
		bid, _ := bm["block_id"].(string)
		aid, _ := el["action_id"].(string)
		typ, _ := el["type"].(string)
		st := map[string]any{"type": typ}
		switch typ {
		case "plain_text_input":
			st["value"] = el["initial_value"]
		case "static_select":
			st["selected_option"] = el["initial_option"]
		case "multi_static_select", "checkboxes":
			if opts, ok := el["initial_options"]; ok {
				st["selected_options"] = opts
			} else {
				st["selected_options"] = []any{}
			}
		}
		if out[bid] == nil {
			out[bid] = map[string]map[string]any{}
		}
		out[bid][aid] = st
	}
	return out
}

// SubmitView sends the view_submission of an open view by user: the
// view's inputs keep their initial values unless edit changes them. It
// returns the envelope id; WaitAck returns the bot's response
// (response_action and errors, or nothing to close the modal).
func (t Sender) SubmitView(user, viewID string, edit func(ViewValues)) string {
	t.s.mu.Lock()
	v := t.s.views[viewID]
	if v == nil {
		t.s.mu.Unlock()
		panic(fmt.Sprintf("slackfake: SubmitView(%q): no such view", viewID))
	}
	view := clone(v)
	t.s.mu.Unlock()
	values := initialValues(view)
	if edit != nil {
		edit(values)
	}
	view["state"] = map[string]any{"values": values}
	return t.SendInteractive(map[string]any{
		"type":          "view_submission",
		"user":          map[string]any{"id": user, "username": user, "name": user, "team_id": t.s.cfg.id.TeamID},
		"view":          view,
		"response_urls": []any{},
	})
}

// validateView checks the limits Slack enforces on a modal and returns
// Slack-style messages, or nil.
func validateView(v map[string]any) []string {
	var msgs []string
	bad := func(pointer, format string, args ...any) {
		msgs = append(msgs, fmt.Sprintf("[ERROR] %s [json-pointer:/view%s]", fmt.Sprintf(format, args...), pointer))
	}
	plainMax := func(at string, o any, max int, required bool) {
		m, _ := o.(map[string]any)
		if m == nil {
			if required {
				bad(at, "missing required field: text")
			}
			return
		}
		if m["type"] != "plain_text" {
			bad(at+"/type", "must be plain_text")
		}
		if n := utf8.RuneCountInString(fmt.Sprint(m["text"])); n > max {
			bad(at+"/text", "must be less than %d characters", max+1)
		}
	}
	if v["type"] != "modal" {
		bad("/type", "must be modal")
	}
	plainMax("/title", v["title"], 24, true)
	plainMax("/submit", v["submit"], 24, false)
	plainMax("/close", v["close"], 24, false)
	if s, _ := v["private_metadata"].(string); len(s) > 3000 {
		bad("/private_metadata", "must be less than 3001 characters")
	}
	if s, _ := v["callback_id"].(string); len(s) > 255 {
		bad("/callback_id", "must be less than 256 characters")
	}
	blocks, _ := v["blocks"].([]any)
	if len(blocks) > 100 {
		bad("/blocks", "must be less than 101 items")
	}
	hasInput := false
	var plain []map[string]any
	for i, b := range blocks {
		bm, _ := b.(map[string]any)
		at := fmt.Sprintf("/blocks/%d", i)
		plain = append(plain, bm)
		if bm["type"] != "input" {
			continue
		}
		hasInput = true
		plainMax(at+"/label", bm["label"], 2000, true)
		if bm["hint"] != nil {
			plainMax(at+"/hint", bm["hint"], 2000, false)
		}
		el, _ := bm["element"].(map[string]any)
		if el == nil {
			bad(at+"/element", "missing required field: element")
			continue
		}
		msgs = append(msgs, validateElement(at+"/element", el)...)
	}
	// Sections, contexts and the rest share the message limits.
	for _, m := range validateBlocks(plain) {
		if !slices.Contains(msgs, m) && !strings.Contains(m, "must be less than 51 items") {
			msgs = append(msgs, m)
		}
	}
	if hasInput && v["submit"] == nil {
		bad("/submit", "must provide submit when the view has input blocks")
	}
	return msgs
}

// validateElement checks an input's element: text inputs, selects and
// checkboxes, with the 100-option limit of a select.
func validateElement(at string, el map[string]any) []string {
	var msgs []string
	bad := func(pointer, format string, args ...any) {
		msgs = append(msgs, fmt.Sprintf("[ERROR] %s [json-pointer:/view%s]", fmt.Sprintf(format, args...), pointer))
	}
	if id, _ := el["action_id"].(string); len(id) > 255 {
		bad(at+"/action_id", "must be less than 256 characters")
	}
	values := map[string]bool{}
	checkOptions := func(at string, opts []any, max int) {
		if len(opts) > max {
			bad(at, "must be less than %d items", max+1)
		}
		for j, o := range opts {
			om, _ := o.(map[string]any)
			text, _ := om["text"].(map[string]any)
			if n := utf8.RuneCountInString(fmt.Sprint(text["text"])); n > 75 {
				bad(fmt.Sprintf("%s/%d/text", at, j), "must be less than 76 characters")
			}
			val, _ := om["value"].(string)
			if len(val) > 150 {
				bad(fmt.Sprintf("%s/%d/value", at, j), "must be less than 151 characters")
			}
			values[val] = true
		}
	}
	switch el["type"] {
	case "plain_text_input":
		maxLen := 3000
		if n, ok := el["max_length"].(float64); ok {
			if n > 3000 {
				bad(at+"/max_length", "must be at most 3000")
			}
			maxLen = int(n)
		}
		if s, _ := el["initial_value"].(string); utf8.RuneCountInString(s) > maxLen {
			bad(at+"/initial_value", "must be less than %d characters", maxLen+1)
		}
	case "static_select", "multi_static_select", "checkboxes":
		opts, hasOpts := el["options"].([]any)
		groups, hasGroups := el["option_groups"].([]any)
		if hasOpts == hasGroups && el["type"] != "checkboxes" {
			bad(at, "must provide exactly one of options or option_groups")
		}
		max := 100
		if el["type"] == "checkboxes" {
			max = 10
		}
		checkOptions(at+"/options", opts, max)
		if len(groups) > 100 {
			bad(at+"/option_groups", "must be less than 101 items")
		}
		for j, g := range groups {
			gm, _ := g.(map[string]any)
			gopts, _ := gm["options"].([]any)
			checkOptions(fmt.Sprintf("%s/option_groups/%d/options", at, j), gopts, 100)
		}
		var initial []any
		if o, ok := el["initial_option"].(map[string]any); ok {
			initial = append(initial, o)
		}
		if os, ok := el["initial_options"].([]any); ok {
			initial = append(initial, os...)
		}
		for _, o := range initial {
			om, _ := o.(map[string]any)
			if val, _ := om["value"].(string); !values[val] {
				bad(at+"/initial_options", "initial option %q is not among the options", val)
			}
		}
	}
	return msgs
}
