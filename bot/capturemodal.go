package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher"
	"github.com/incidentbot/incidentbot/store"
)

// Ids of the capture modal and of the buttons on a team case.
const (
	captureModalID     = "capture_case_modal"
	actionCaseEdit     = "team_case_edit"
	actionCaseDelete   = "team_case_delete"
	blockTitle         = "title"
	blockSummary       = "summary"
	blockSeen          = "symptoms_text"
	blockCause         = "root_cause_text"
	blockHelped        = "helped"
	blockActions       = "action_items"
	blockSymptoms      = "symptoms"
	blockComponents    = "components"
	blockRootCause     = "root_cause"
	blockContributing  = "contributing"
	blockShare         = "share"
	inputAction        = "value"
	shareValue         = "workspace"
	maxTitle           = 150
	maxField           = 3000
	maxMetadata        = 3000
	maxOptions         = 100 // options in a select, and in each option group
	viewOpenTimeout    = 2500 * time.Millisecond
	saveTimeout        = 2 * time.Second
	maxSelectedTags    = 10
	maxOptionLabel     = 75
	maxTimelineInModal = 8
)

// capturePhrases are the capture's words in each language.
var capturePhrases = phrasebook{
	cases.English: {
		"modal_title":   "Save incident case",
		"save":          "Save",
		"cancel":        "Cancel",
		"loading":       ":hourglass_flowing_sand: Reading the channel's history to draft the case…",
		"intro":         "Drafted from %d messages of #%s. Edit anything before saving: the next similar alert will suggest this case.",
		"intro_edit":    "Editing case `%s`.",
		"timeline":      "Timeline",
		"alert":         "first alert",
		"declared":      "declared",
		"mitigated":     "mitigated",
		"resolved":      "resolved",
		"last":          "last message",
		"f_title":       "Title",
		"f_summary":     "Summary and timeline",
		"f_seen":        "What responders saw",
		"f_cause":       "Root cause",
		"f_helped":      "What helped (one per line)",
		"f_actions":     "Action items (one per line)",
		"f_symptoms":    "Symptoms",
		"f_components":  "Components",
		"f_root":        "Root cause tag",
		"f_contrib":     "Contributing factors",
		"pick":          "Pick from the taxonomy",
		"private_note":  ":lock: This is a private channel: a case captured here is suggested only in this channel, unless you share it with the whole workspace.",
		"share":         "Share with the whole workspace",
		"share_hint":    "The case's title, summary and steps then appear in suggestions in any channel.",
		"e_title":       "Give the case a title.",
		"e_text":        "Write a summary or what responders saw: the case is matched on it.",
		"e_long":        "Keep this under %d characters.",
		"e_tag":         "%q is not in the taxonomy.",
		"e_save":        "The case could not be saved (the error is logged). Everything you wrote is still here: press Save to try again.",
		"e_busy":        "Too much is being saved right now. Everything you wrote is still here: press Save again in a few seconds.",
		"e_gone":        "This case was deleted meanwhile; cancel and capture it again.",
		"failed":        ":warning: I could not read this channel's history (%s). Invite me to the channel and try again.",
		"not_set":       "Capturing cases is not set up: the bot runs without an activity store.",
		"saved":         ":card_file_box: <@%s> saved this incident as case `%s`: *%s*",
		"updated":       ":pencil2: <@%s> updated case `%s`: *%s*",
		"saved_private": "It is suggested only in this channel.",
		"saved_shared":  "It is suggested in every channel.",
		"saved_public":  "The next similar alert in any channel will suggest it.",
		"edit":          "Edit",
		"delete":        "Delete",
		"confirm_title": "Delete this case?",
		"confirm_text":  "Case `%s` will no longer be suggested. This cannot be undone.",
		"confirm_yes":   "Delete",
		"confirm_no":    "Keep it",
		"deleted":       "Case `%s` was deleted by <@%s>.",
		"not_allowed":   "Only <@%s>, who captured case `%s`, or a member of the admin group can delete it.",
		"not_allowed_x": "Only the person who captured case `%s`, or a member of the admin group, can delete it.",
		"check_failed":  "I could not check the admin group just now; please try again.",
		"no_team_case":  "There is no team case %q (it may have been deleted).",
		"store_failed":  "The case store did not answer; the error is logged. Please try again.",
		"expired":       "Slack gave me too little time to open the form. Please try again.",
	},
	cases.Korean: {
		"modal_title":   "장애 사례 저장",
		"save":          "저장",
		"cancel":        "취소",
		"loading":       ":hourglass_flowing_sand: 채널 기록을 읽어 사례 초안을 만드는 중입니다…",
		"intro":         "#%[2]s 채널의 메시지 %[1]d개로 만든 초안입니다. 저장 전에 고쳐 주세요. 다음에 비슷한 알림이 오면 이 사례를 제안합니다.",
		"intro_edit":    "`%s` 사례를 고치는 중입니다.",
		"timeline":      "타임라인",
		"alert":         "첫 알림",
		"declared":      "장애 선언",
		"mitigated":     "완화",
		"resolved":      "복구",
		"last":          "마지막 메시지",
		"f_title":       "제목",
		"f_summary":     "요약과 타임라인",
		"f_seen":        "대응자가 본 증상",
		"f_cause":       "원인",
		"f_helped":      "도움이 된 조치 (한 줄에 하나)",
		"f_actions":     "후속 조치 (한 줄에 하나)",
		"f_symptoms":    "증상",
		"f_components":  "구성 요소",
		"f_root":        "원인 태그",
		"f_contrib":     "기여 요인",
		"pick":          "분류에서 고르기",
		"private_note":  ":lock: 비공개 채널입니다. 여기서 저장한 사례는 워크스페이스 전체에 공유하지 않으면 이 채널에서만 제안됩니다.",
		"share":         "워크스페이스 전체에 공유",
		"share_hint":    "공유하면 사례의 제목, 요약, 조치가 모든 채널의 제안에 나타납니다.",
		"e_title":       "사례 제목을 적어 주세요.",
		"e_text":        "요약이나 대응자가 본 증상을 적어 주세요. 사례는 이 내용으로 찾습니다.",
		"e_long":        "%d자 이하로 줄여 주세요.",
		"e_tag":         "%q 는 분류에 없습니다.",
		"e_save":        "사례를 저장하지 못했습니다 (오류는 기록했습니다). 적은 내용은 그대로 있으니 저장을 다시 눌러 주세요.",
		"e_busy":        "지금 저장이 많이 몰렸습니다. 적은 내용은 그대로 있으니 몇 초 뒤 저장을 다시 눌러 주세요.",
		"e_gone":        "그 사이에 사례가 삭제됐습니다. 취소하고 다시 저장해 주세요.",
		"failed":        ":warning: 이 채널의 기록을 읽지 못했습니다 (%s). 봇을 채널에 초대한 뒤 다시 시도해 주세요.",
		"not_set":       "사례 저장이 설정되지 않았습니다. 봇이 활동 저장소 없이 실행 중입니다.",
		"saved":         ":card_file_box: <@%s> 님이 이 장애를 `%s` 사례로 저장했습니다: *%s*",
		"updated":       ":pencil2: <@%s> 님이 `%s` 사례를 고쳤습니다: *%s*",
		"saved_private": "이 채널에서만 제안됩니다.",
		"saved_shared":  "모든 채널에서 제안됩니다.",
		"saved_public":  "다음에 어느 채널에서든 비슷한 알림이 오면 제안합니다.",
		"edit":          "고치기",
		"delete":        "삭제",
		"confirm_title": "사례를 삭제할까요?",
		"confirm_text":  "`%s` 사례는 더 이상 제안되지 않습니다. 되돌릴 수 없습니다.",
		"confirm_yes":   "삭제",
		"confirm_no":    "두기",
		"deleted":       "<@%[2]s> 님이 `%[1]s` 사례를 삭제했습니다.",
		"not_allowed":   "`%[2]s` 사례는 저장한 <@%[1]s> 님이나 관리자 그룹만 삭제할 수 있습니다.",
		"not_allowed_x": "`%s` 사례는 저장한 사람이나 관리자 그룹만 삭제할 수 있습니다.",
		"check_failed":  "지금 관리자 그룹을 확인하지 못했습니다. 다시 시도해 주세요.",
		"no_team_case":  "%q 팀 사례가 없습니다 (삭제됐을 수 있습니다).",
		"store_failed":  "사례 저장소가 응답하지 않았습니다. 오류는 기록했습니다. 다시 시도해 주세요.",
		"expired":       "Slack 이 양식을 열 시간을 너무 짧게 주었습니다. 다시 시도해 주세요.",
	},
}

// captureMeta is what the modal carries in its private_metadata: what the
// save needs beyond the inputs.
type captureMeta struct {
	Channel   string            `json:"c"`
	Name      string            `json:"n,omitempty"` // the channel's name, for the case id
	Thread    string            `json:"t,omitempty"` // where to confirm the save
	ID        string            `json:"id,omitempty"`
	Private   bool              `json:"p,omitempty"`
	Lang      string            `json:"l,omitempty"`
	Date      string            `json:"d,omitempty"`
	Resolved  string            `json:"r,omitempty"` // timeline.resolved_after
	Detection string            `json:"x,omitempty"`
	Source    string            `json:"s,omitempty"`
	Links     map[string]string `json:"k,omitempty"` // a quoted step's line hash -> its message's link
}

// lineKey identifies a step's line, to find its link again after editing.
func lineKey(line string) string {
	sum := sha256.Sum256([]byte(flatten(line)))
	return hex.EncodeToString(sum[:5])
}

// encode writes the metadata within Slack's limit: links, then the
// detection text, are dropped until it fits.
func (m captureMeta) encode() string {
	for {
		data, _ := json.Marshal(m)
		if len(data) <= maxMetadata {
			return string(data)
		}
		switch {
		case len(m.Links) > 0:
			keys := make([]string, 0, len(m.Links))
			for k := range m.Links {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			delete(m.Links, keys[len(keys)-1])
		case m.Detection != "":
			m.Detection = ""
		case m.Source != "" || m.Thread != "":
			m.Source, m.Thread = "", ""
		default:
			// What is left is ids and a channel name, far under the
			// limit; cut the name anyway, so that this always ends.
			m.Name = clip(m.Name, 80)
			data, _ = json.Marshal(m)
			return string(data)
		}
	}
}

// loadingView is the modal opened at once, while the draft is built.
func loadingView(lang cases.Lang) slack.ModalViewRequest {
	return slack.ModalViewRequest{
		Type:       slack.VTModal,
		Title:      plain(capturePhrases.say(lang, "modal_title")),
		Close:      plain(capturePhrases.say(lang, "cancel")),
		CallbackID: captureModalID,
		Blocks:     slack.Blocks{BlockSet: []slack.Block{slack.NewSectionBlock(mrkdwn(capturePhrases.say(lang, "loading")), nil, nil)}},
	}
}

// messageView is a modal that only says something.
func messageView(lang cases.Lang, text string) slack.ModalViewRequest {
	v := loadingView(lang)
	v.Blocks = slack.Blocks{BlockSet: []slack.Block{slack.NewSectionBlock(mrkdwn(text), nil, nil)}}
	return v
}

// textInput is an input block with a text field.
func textInput(id, label, value string, multiline, optional bool, maxLen int) *slack.InputBlock {
	el := &slack.PlainTextInputBlockElement{Type: slack.METPlainTextInput, ActionID: inputAction,
		InitialValue: clip(value, maxLen), Multiline: multiline, MaxLength: maxLen}
	in := slack.NewInputBlock(id, plain(label), nil, el)
	in.Optional = optional
	return in
}

// tagOptions are the taxonomy's tags of a kind as select options: in
// groups of at most 100 when there are more than a select takes.
func tagOptions(tax *cases.Taxonomy, kind cases.Kind, lang cases.Lang) ([]*slack.OptionBlockObject, []*slack.OptionGroupBlockObject, map[string]*slack.OptionBlockObject) {
	byID := map[string]*slack.OptionBlockObject{}
	var opts []*slack.OptionBlockObject
	for _, t := range tax.Tags(kind) {
		if len(t.ID) > 150 {
			continue
		}
		o := slack.NewOptionBlockObject(t.ID, plain(clip(t.Label.In(lang), maxOptionLabel)), nil)
		opts = append(opts, o)
		byID[t.ID] = o
	}
	if len(opts) <= maxOptions {
		return opts, nil, byID
	}
	var groups []*slack.OptionGroupBlockObject
	for i := 0; i < len(opts) && len(groups) < maxOptions; i += maxOptions {
		part := opts[i:min(len(opts), i+maxOptions)]
		label := fmt.Sprintf("%s – %s", clip(part[0].Text.Text, 35), clip(part[len(part)-1].Text.Text, 35))
		groups = append(groups, slack.NewOptionGroupBlockElement(plain(clip(label, maxOptionLabel)), part...))
	}
	// Tags past the last group cannot be offered.
	kept := map[string]*slack.OptionBlockObject{}
	for _, g := range groups {
		for _, o := range g.Options {
			kept[o.Value] = o
		}
	}
	return nil, groups, kept
}

// tagSelect is an input block picking tags of a kind: several, or one.
func tagSelect(tax *cases.Taxonomy, kind cases.Kind, id, label string, selected []string, multi bool, lang cases.Lang) slack.Block {
	opts, groups, byID := tagOptions(tax, kind, lang)
	var initial []*slack.OptionBlockObject
	for _, s := range selected {
		if o, ok := byID[s]; ok && len(initial) < maxSelectedTags {
			initial = append(initial, o)
		}
	}
	var el slack.BlockElement
	if multi {
		ms := slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic, plain(capturePhrases.say(lang, "pick")), inputAction, opts...)
		ms.OptionGroups, ms.InitialOptions = groups, initial
		maxSel := maxSelectedTags
		ms.MaxSelectedItems = &maxSel
		el = ms
	} else {
		s := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain(capturePhrases.say(lang, "pick")), inputAction, opts...)
		s.OptionGroups = groups
		if len(initial) > 0 {
			s.InitialOption = initial[0]
		}
		el = s
	}
	in := slack.NewInputBlock(id, plain(label), nil, el)
	in.Optional = true
	return in
}

// stepLines writes steps one per line, for a text field.
func stepLines(steps []cases.Step, lang cases.Lang) string {
	var lines []string
	for _, s := range steps {
		if t := flatten(s.Text.In(lang)); t != "" {
			lines = append(lines, t)
		}
	}
	return strings.Join(lines, "\n")
}

// captureView is the modal with a draft or a team case to edit.
func (b *Bot) captureView(cp *capture) slack.ModalViewRequest {
	lang, c := cp.lang, cp.c
	tax := b.opts.Taxonomy
	meta := captureMeta{Channel: cp.channel, Name: cp.channelName, Thread: cp.thread, ID: cp.id, Private: cp.private,
		Lang: string(lang), Date: c.Date, Detection: clip(c.Detection.In(lang), 300), Links: map[string]string{}}
	if d := c.Timeline.ResolvedAfter; d != nil {
		meta.Resolved = d.String()
	}
	if len(c.Sources) > 0 {
		meta.Source = c.Sources[0].URL
	}
	for _, s := range append(slices.Clone(c.Remediation), c.ActionItems...) {
		if u := linkURL(s.Source); u != "" && len(s.Source) < 400 {
			meta.Links[lineKey(s.Text.In(lang))] = s.Source
		}
	}

	var blocks []slack.Block
	intro := capturePhrases.say(lang, "intro", cp.messages, escape(cp.channelName))
	if cp.id != "" {
		intro = capturePhrases.say(lang, "intro_edit", escape(cp.id))
	}
	blocks = append(blocks, slack.NewSectionBlock(mrkdwn(intro), nil, nil))
	if len(cp.timeline) > 0 {
		var tl strings.Builder
		fmt.Fprintf(&tl, "*%s*", capturePhrases.say(lang, "timeline"))
		for _, e := range cp.timeline[:min(len(cp.timeline), maxTimelineInModal)] {
			when := e.At.UTC().Format("01-02 15:04")
			if u := linkURL(e.Link); u != "" {
				when = "<" + u + "|" + when + ">"
			}
			fmt.Fprintf(&tl, "\n• %s UTC · %s: %s", when, capturePhrases.say(lang, e.Kind), escape(clip(e.Text, 200)))
		}
		blocks = append(blocks, slack.NewContextBlock("timeline", mrkdwn(tl.String())))
	}
	blocks = append(blocks,
		textInput(blockTitle, capturePhrases.say(lang, "f_title"), c.Title.In(lang), false, false, maxTitle),
		textInput(blockSummary, capturePhrases.say(lang, "f_summary"), c.Summary.In(lang), true, true, maxField),
		textInput(blockSeen, capturePhrases.say(lang, "f_seen"), c.SymptomsText.In(lang), true, true, maxField),
		textInput(blockCause, capturePhrases.say(lang, "f_cause"), c.Trigger.In(lang), true, true, maxField),
		textInput(blockHelped, capturePhrases.say(lang, "f_helped"), stepLines(c.Remediation, lang), true, true, maxField),
		textInput(blockActions, capturePhrases.say(lang, "f_actions"), stepLines(c.ActionItems, lang), true, true, maxField),
		tagSelect(tax, cases.KindSymptom, blockSymptoms, capturePhrases.say(lang, "f_symptoms"), c.Symptoms, true, lang),
		tagSelect(tax, cases.KindComponent, blockComponents, capturePhrases.say(lang, "f_components"), c.Components, true, lang),
		tagSelect(tax, cases.KindRootCause, blockRootCause, capturePhrases.say(lang, "f_root"), nonEmpty([]string{c.RootCause}), false, lang),
		tagSelect(tax, cases.KindContributing, blockContributing, capturePhrases.say(lang, "f_contrib"), c.Contributing, true, lang),
	)
	if cp.channelPrivate {
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(capturePhrases.say(lang, "private_note")), nil, nil))
		opt := slack.NewOptionBlockObject(shareValue, plain(capturePhrases.say(lang, "share")), plain(capturePhrases.say(lang, "share_hint")))
		cb := slack.NewCheckboxGroupsBlockElement(inputAction, opt)
		if !cp.private {
			cb.InitialOptions = []*slack.OptionBlockObject{opt}
		}
		in := slack.NewInputBlock(blockShare, plain(capturePhrases.say(lang, "share")), nil, cb)
		in.Optional = true
		blocks = append(blocks, in)
	}
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		Title:           plain(capturePhrases.say(lang, "modal_title")),
		Submit:          plain(capturePhrases.say(lang, "save")),
		Close:           plain(capturePhrases.say(lang, "cancel")),
		CallbackID:      captureModalID,
		PrivateMetadata: meta.encode(),
		Blocks:          slack.Blocks{BlockSet: blocks},
	}
}

// startCapture opens the capture modal for a user: a loading view at once,
// within the trigger's few seconds, then the draft once the channel's
// history is read.
func (b *Bot) startCapture(ctx context.Context, triggerID, user, channel, thread string) {
	v, err := b.openLoading(ctx, triggerID)
	if err != nil {
		b.log.Warn("capture: opening the modal failed", "channel", channel, "err", err)
		blocks, fallback := renderText(capturePhrases.say(b.opts.DefaultLang, "expired"))
		_ = b.post.ephemeral(ctx, channel, user, "", blocks, fallback)
		return
	}
	b.fillCapture(ctx, v, channel, thread)
}

// openLoading opens the loading view with a trigger_id.
func (b *Bot) openLoading(ctx context.Context, triggerID string) (*slack.ViewResponse, error) {
	octx, cancel := context.WithTimeout(ctx, viewOpenTimeout)
	defer cancel()
	v, err := b.api.OpenViewContext(octx, triggerID, loadingView(b.opts.DefaultLang))
	if err != nil {
		b.m.apiErrors.WithLabelValues("views.open").Inc()
	}
	return v, err
}

// fillCapture builds the draft and puts it in the open loading view.
func (b *Bot) fillCapture(ctx context.Context, v *slack.ViewResponse, channel, thread string) {
	lang := b.opts.DefaultLang
	bctx, cancel := context.WithTimeout(ctx, captureTimeout)
	defer cancel()
	cp, err := b.buildDraft(bctx, channel, thread)
	var view slack.ModalViewRequest
	if err != nil {
		b.log.Warn("capture: reading the channel failed", "channel", channel, "err", err)
		view = messageView(lang, capturePhrases.say(lang, "failed", escape(slackReason(err))))
	} else {
		view = b.captureView(cp)
	}
	if _, err := b.api.UpdateViewContext(bctx, view, "", v.Hash, v.ID); err != nil {
		// The user may have closed the modal meanwhile.
		b.m.apiErrors.WithLabelValues("views.update").Inc()
		b.log.Warn("capture: showing the draft failed", "channel", channel, "err", err)
	}
}

// captureWork is the work of an interaction that captures, edits or
// deletes a team case, or nil for any other interaction.
func (b *Bot) captureWork(in *interaction, channel, thread string, orphan bool) func(context.Context) {
	action := ""
	if in.Type == "block_actions" && len(in.Actions) > 0 {
		action = in.Actions[0].ActionID
	}
	lang := b.opts.DefaultLang
	notSet := func(ctx context.Context) {
		blocks, fallback := renderText(capturePhrases.say(lang, "not_set"))
		_ = b.post.ephemeral(ctx, channel, in.User.ID, "", blocks, fallback)
	}
	switch {
	case in.Type == "message_action" && in.CallbackID == CaptureID:
		switch {
		case orphan: // its trigger_id is stale: nothing can be opened
			return func(context.Context) {}
		case b.opts.TeamCases == nil:
			return notSet
		}
		return func(ctx context.Context) { b.startCapture(ctx, in.TriggerID, in.User.ID, channel, thread) }
	case action == actionCaseEdit:
		if orphan || b.opts.TeamCases == nil {
			return func(context.Context) {}
		}
		return func(ctx context.Context) { b.onEditCase(ctx, in, channel, in.Actions[0].Value) }
	case action == actionCaseDelete:
		if b.opts.TeamCases == nil {
			return func(context.Context) {}
		}
		return func(ctx context.Context) { b.onDeleteCase(ctx, in, channel, in.Actions[0].Value) }
	}
	return nil
}

// goCapture runs capture work now, beside the queue, bounded like slash
// commands; when too much runs already, busy is called instead.
func (b *Bot) goCapture(run func(context.Context), busy func()) {
	started := b.goLimited("recovered from a panic in a capture", func() {
		ctx, cancel := context.WithTimeout(context.Background(), captureTimeout+10*time.Second)
		defer cancel()
		run(ctx)
	}, nil)
	if !started {
		b.m.suppressed.WithLabelValues("commands_busy").Inc()
		b.log.Warn("too many captures at once; one was dropped", "max", cap(b.slashSem))
		busy()
	}
}

// slackReason is the short reason of a Slack error, for a user.
func slackReason(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return "error"
}

// onViewSubmission answers a submitted capture modal in its ack: with the
// fields to fix, or, once the case is stored, with nothing (the modal
// closes). A store that fails keeps the modal open with everything typed
// in it, saying so. The ack must go within Slack's three seconds, so the
// save is bounded.
func (b *Bot) onViewSubmission(ctx context.Context, req *socketmode.Request) {
	var cb slack.InteractionCallback
	if err := json.Unmarshal(req.Payload, &cb); err != nil || cb.View.CallbackID != captureModalID {
		b.ack(ctx, req, nil)
		if err != nil {
			b.log.Warn("view submission not understood", "envelope_id", req.EnvelopeID, "err", err)
		}
		return
	}
	var meta captureMeta
	_ = json.Unmarshal([]byte(cb.View.PrivateMetadata), &meta)
	lang := cases.Lang(meta.Lang)
	if _, ok := capturePhrases[lang]; !ok {
		lang = b.opts.DefaultLang
	}
	started := b.goLimited("recovered from a panic saving a case", func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
		defer cancel()
		saved, errs := b.saveSubmission(sctx, cb.User.ID, meta, lang, cb.View.State)
		if len(errs) > 0 {
			b.ack(ctx, req, viewErrors(errs))
			return
		}
		b.ack(ctx, req, nil)
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), captureTimeout)
		defer cancel()
		b.afterSave(actx, cb.User.ID, meta, lang, saved)
	}, func() {
		b.ack(ctx, req, viewErrors(map[string]string{blockTitle: capturePhrases.say(lang, "e_save")}))
	})
	if !started {
		b.ack(ctx, req, viewErrors(map[string]string{blockTitle: capturePhrases.say(lang, "e_busy")}))
	}
}

func viewErrors(errs map[string]string) map[string]any {
	return map[string]any{"response_action": "errors", "errors": errs}
}

// submitted reads the inputs of a submitted modal.
type submitted struct {
	values map[string]map[string]slack.BlockAction
}

func (s submitted) text(block string) string {
	return strings.TrimSpace(s.values[block][inputAction].Value)
}

func (s submitted) options(block string) []string {
	a := s.values[block][inputAction]
	var out []string
	if a.SelectedOption.Value != "" {
		out = append(out, a.SelectedOption.Value)
	}
	for _, o := range a.SelectedOptions {
		out = append(out, o.Value)
	}
	return out
}

// textIn makes a field's text a case text, Korean when it is written in
// Korean; unchanged text keeps the case's text as it was (both languages).
func textIn(s string, was cases.Text, lang cases.Lang) cases.Text {
	if s == strings.TrimSpace(was.In(lang)) {
		return was
	}
	if matcher.DetectLang(s) == cases.Korean {
		return cases.Text{Ko: s}
	}
	return cases.Text{En: s}
}

// stepsFrom reads a field of one step per line; a line that was quoted
// from a message keeps its link, and one that was a step keeps the rest of
// it.
func stepsFrom(field string, was []cases.Step, links map[string]string, lang cases.Lang) []cases.Step {
	var out []cases.Step
	for _, l := range strings.Split(field, "\n") {
		l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "•*-·"))
		if l == "" {
			continue
		}
		step := cases.Step{Text: textIn(l, cases.Text{}, lang), Source: links[lineKey(l)]}
		for _, w := range was {
			if flatten(w.Text.In(lang)) == l {
				step = w
				break
			}
		}
		out = append(out, step)
	}
	return out
}

// saveSubmission checks a submitted modal and stores its case. It returns
// the stored team case, or the errors to show beside the fields.
func (b *Bot) saveSubmission(ctx context.Context, user string, meta captureMeta, lang cases.Lang, state *slack.ViewState) (store.TeamCase, map[string]string) {
	if b.opts.TeamCases == nil {
		return store.TeamCase{}, map[string]string{blockTitle: capturePhrases.say(lang, "not_set")}
	}
	in := submitted{}
	if state != nil {
		in.values = state.Values
	}
	errs := map[string]string{}
	title := in.text(blockTitle)
	switch {
	case title == "":
		errs[blockTitle] = capturePhrases.say(lang, "e_title")
	case utf8.RuneCountInString(title) > maxTitle:
		errs[blockTitle] = capturePhrases.say(lang, "e_long", maxTitle)
	}
	for _, f := range []string{blockSummary, blockSeen, blockCause, blockHelped, blockActions} {
		if utf8.RuneCountInString(in.text(f)) > maxField {
			errs[f] = capturePhrases.say(lang, "e_long", maxField)
		}
	}
	if in.text(blockSummary) == "" && in.text(blockSeen) == "" {
		errs[blockSummary] = capturePhrases.say(lang, "e_text")
	}
	tags := map[string][]string{}
	for block, kind := range map[string]cases.Kind{blockSymptoms: cases.KindSymptom, blockComponents: cases.KindComponent,
		blockRootCause: cases.KindRootCause, blockContributing: cases.KindContributing} {
		for _, id := range in.options(block) {
			if _, ok := b.opts.Taxonomy.Lookup(kind, id); !ok {
				errs[block] = capturePhrases.say(lang, "e_tag", id)
			} else if !slices.Contains(tags[block], id) {
				tags[block] = append(tags[block], id)
			}
		}
	}
	if len(errs) > 0 {
		return store.TeamCase{}, errs
	}

	c := &cases.Case{Org: b.team, Date: meta.Date, Review: cases.Review{WrittenBy: "capture"}, SymptomsTextKind: cases.SymptomsReported}
	if c.Org == "" {
		c.Org = "team"
	}
	if meta.Detection != "" {
		c.Detection = textIn(meta.Detection, cases.Text{}, lang)
	}
	if meta.Resolved != "" {
		if d, err := cases.ParseDuration(meta.Resolved); err == nil {
			c.Timeline.ResolvedAfter = &d
		}
	}
	if meta.Source != "" {
		c.Sources = []cases.Source{{URL: meta.Source}}
	}
	tc := store.TeamCase{Channel: meta.Channel, Private: meta.Private, CreatedBy: user, UpdatedBy: user}
	if meta.ID != "" {
		old, ok, err := b.opts.TeamCases.TeamCase(ctx, meta.ID)
		if err != nil {
			b.log.Error("saving a case failed: reading it", "case_id", meta.ID, "err", err)
			return store.TeamCase{}, map[string]string{blockTitle: capturePhrases.say(lang, "e_save")}
		}
		if !ok {
			return store.TeamCase{}, map[string]string{blockTitle: capturePhrases.say(lang, "e_gone")}
		}
		var was cases.Case
		if err := json.Unmarshal(old.Case, &was); err != nil {
			b.log.Warn("a stored team case is not readable; replacing it", "case_id", meta.ID, "err", err)
		} else {
			c = &was
		}
		tc = old
		tc.UpdatedBy, tc.UpdatedAt = user, time.Time{}
		tc.Channel = old.Channel
	}
	if _, ok := in.values[blockShare]; ok {
		// The box is in the modal only for a private channel.
		tc.Private = !slices.Contains(in.options(blockShare), shareValue)
	}
	c.Title = textIn(title, c.Title, lang)
	c.Summary = textIn(in.text(blockSummary), c.Summary, lang)
	c.SymptomsText = textIn(in.text(blockSeen), c.SymptomsText, lang)
	c.Trigger = textIn(in.text(blockCause), c.Trigger, lang)
	c.Remediation = stepsFrom(in.text(blockHelped), c.Remediation, meta.Links, lang)
	c.ActionItems = stepsFrom(in.text(blockActions), c.ActionItems, meta.Links, lang)
	c.Symptoms, c.Components, c.Contributing = tags[blockSymptoms], tags[blockComponents], tags[blockContributing]
	c.RootCause = ""
	if rc := tags[blockRootCause]; len(rc) > 0 {
		c.RootCause = rc[0]
	}
	c.UpdatedAt = time.Now().UTC().Format(time.DateOnly)
	if c.ID == "" || meta.ID == "" {
		id, err := b.newCaseID(ctx, meta.Name, meta.Date)
		if err != nil {
			b.log.Error("saving a case failed: choosing its id", "channel", meta.Channel, "err", err)
			return store.TeamCase{}, map[string]string{blockTitle: capturePhrases.say(lang, "e_save")}
		}
		c.ID = id
	}
	tc.ID = c.ID
	for _, p := range cases.Validate(c, b.opts.Taxonomy) {
		if p.Severity == cases.Error {
			b.log.Warn("a captured case does not validate", "case_id", c.ID, "problem", p.String())
			return store.TeamCase{}, map[string]string{blockSummary: clip(p.Msg, 300)}
		}
	}
	body, err := json.Marshal(c)
	if err != nil {
		b.log.Error("saving a case failed: encoding it", "case_id", c.ID, "err", err)
		return store.TeamCase{}, map[string]string{blockTitle: capturePhrases.say(lang, "e_save")}
	}
	tc.Case = body
	saved, err := b.opts.TeamCases.PutTeamCase(ctx, tc)
	if err != nil {
		b.log.Error("saving a case failed; the modal stays open with what was typed", "case_id", c.ID, "channel", meta.Channel, "err", err)
		return store.TeamCase{}, map[string]string{blockTitle: capturePhrases.say(lang, "e_save")}
	}
	b.scopes.set(saved.ID, caseScope{channel: saved.Channel, private: saved.Private})
	b.log.Info("team case saved", "case_id", saved.ID, "channel", saved.Channel, "private", saved.Private, "user", user)
	return saved, nil
}

// afterSave makes this replica's library take the saved case at once, and
// confirms the save in the channel's incident thread.
func (b *Bot) afterSave(ctx context.Context, user string, meta captureMeta, lang cases.Lang, saved store.TeamCase) {
	b.refreshLibrary(ctx)
	var c cases.Case
	_ = json.Unmarshal(saved.Case, &c)
	key := "saved"
	if meta.ID != "" {
		key = "updated"
	}
	text := capturePhrases.say(lang, key, user, escape(saved.ID), escape(clip(c.Title.In(lang), 200)))
	switch {
	case saved.Private:
		text += " " + capturePhrases.say(lang, "saved_private")
	case meta.Private:
		text += " " + capturePhrases.say(lang, "saved_shared")
	default:
		text += " " + capturePhrases.say(lang, "saved_public")
	}
	blocks, fallback := renderText(text)
	if _, err := b.post.post(ctx, saved.Channel, meta.Thread, blocks, fallback); err != nil {
		b.log.Warn("confirming a saved case in its channel failed", "case_id", saved.ID, "channel", saved.Channel, "err", err)
	}
}

// refreshLibrary runs the library refresh the bot was given, so that a case
// saved or deleted here is suggested, or no longer, at once.
func (b *Bot) refreshLibrary(ctx context.Context) {
	if b.opts.RefreshLibrary == nil {
		return
	}
	if err := b.opts.RefreshLibrary(ctx); err != nil {
		b.log.Warn("refreshing the library after a team case changed failed; it is picked up on the next refresh", "err", err)
	}
}

// teamCaseActions are the Edit and Delete buttons shown with a team case.
func teamCaseActions(id string, lang cases.Lang) slack.Block {
	del := slack.NewButtonBlockElement(actionCaseDelete, id, plain(capturePhrases.say(lang, "delete")))
	del.Style = slack.StyleDanger
	del.Confirm = slack.NewConfirmationBlockObject(plain(capturePhrases.say(lang, "confirm_title")),
		mrkdwn(capturePhrases.say(lang, "confirm_text", escape(clip(id, 200)))), plain(capturePhrases.say(lang, "confirm_yes")), plain(capturePhrases.say(lang, "confirm_no")))
	del.Confirm.Style = slack.StyleDanger
	return slack.NewActionBlock("team_case:actions",
		slack.NewButtonBlockElement(actionCaseEdit, id, plain(capturePhrases.say(lang, "edit"))), del)
}

// teamCase reads a team case and its case, bounded in time.
func (b *Bot) teamCase(ctx context.Context, id string) (store.TeamCase, *cases.Case, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, saveTimeout)
	defer cancel()
	tc, ok, err := b.opts.TeamCases.TeamCase(ctx, id)
	if err != nil || !ok {
		return tc, nil, ok, err
	}
	var c cases.Case
	if err := json.Unmarshal(tc.Case, &c); err != nil {
		return tc, nil, false, fmt.Errorf("read team case %s: %w", id, err)
	}
	if c.ID == "" {
		c.ID = tc.ID
	}
	b.scopes.set(tc.ID, caseScope{channel: tc.Channel, private: tc.Private})
	return tc, &c, true, nil
}

// onEditCase opens the capture modal on a team case, for a press in
// channel: a case kept to a private channel opens only there.
func (b *Bot) onEditCase(ctx context.Context, in *interaction, channel, id string) {
	lang := b.opts.DefaultLang
	tc, c, ok, err := b.teamCase(ctx, id)
	if err == nil && ok {
		lang = caseLang(c)
		ok = !tc.Private || tc.Channel == channel
	}
	var view slack.ModalViewRequest
	switch {
	case err != nil:
		b.log.Warn("reading a team case to edit failed", "case_id", id, "err", err)
		view = messageView(lang, capturePhrases.say(lang, "store_failed"))
	case !ok:
		view = messageView(lang, capturePhrases.say(lang, "no_team_case", id))
	default:
		_, chPrivate := b.channels.check(ctx, tc.Channel, "")
		view = b.captureView(&capture{channel: tc.Channel, id: tc.ID, private: tc.Private, channelPrivate: chPrivate || tc.Private, lang: lang, c: c})
	}
	octx, cancel := context.WithTimeout(ctx, viewOpenTimeout)
	defer cancel()
	if _, err := b.api.OpenViewContext(octx, in.TriggerID, view); err != nil {
		b.m.apiErrors.WithLabelValues("views.open").Inc()
		b.log.Warn("opening a team case to edit failed", "case_id", id, "err", err)
	}
}

// caseLang is the language a case is written in.
func caseLang(c *cases.Case) cases.Lang {
	if c.Title.En == "" && c.Title.Ko != "" {
		return cases.Korean
	}
	return cases.English
}

// onDeleteCase deletes a team case for the person who captured it or a
// member of the admin group, and tells anyone else who may.
func (b *Bot) onDeleteCase(ctx context.Context, in *interaction, channel, id string) {
	lang := b.opts.DefaultLang
	answer := func(text string, replace bool) {
		blocks, fallback := renderText(text)
		var extra []slack.MsgOption
		if replace {
			extra = append(extra, slack.MsgOptionReplaceOriginal(in.ResponseURL))
		}
		if in.ResponseURL != "" {
			if err := b.post.respond(ctx, in.ResponseURL, blocks, fallback, extra...); err == nil {
				return
			}
		}
		if err := b.post.ephemeral(ctx, channel, in.User.ID, "", blocks, fallback); err != nil {
			b.log.Warn("answering a delete failed", "case_id", id, "err", err)
		}
	}
	tc, c, ok, err := b.teamCase(ctx, id)
	switch {
	case err != nil:
		b.log.Warn("reading a team case to delete failed", "case_id", id, "err", err)
		answer(capturePhrases.say(lang, "store_failed"), false)
		return
	case !ok:
		answer(capturePhrases.say(lang, "no_team_case", id), false)
		return
	}
	lang = caseLang(c)
	allowed, err := b.mayDelete(ctx, in.User.ID, tc)
	if err != nil {
		b.log.Warn("checking the admin group failed; not deleting", "case_id", id, "group", b.opts.AdminGroup, "err", err)
		answer(capturePhrases.say(lang, "check_failed"), false)
		return
	}
	if !allowed {
		b.log.Info("team case delete refused", "case_id", id, "user", in.User.ID)
		if tc.CreatedBy != "" {
			answer(capturePhrases.say(lang, "not_allowed", tc.CreatedBy, escape(id)), false)
		} else {
			answer(capturePhrases.say(lang, "not_allowed_x", escape(id)), false)
		}
		return
	}
	dctx, cancel := context.WithTimeout(ctx, saveTimeout)
	_, err = b.opts.TeamCases.DeleteTeamCase(dctx, id)
	cancel()
	if err != nil {
		b.log.Error("deleting a team case failed", "case_id", id, "err", err)
		answer(capturePhrases.say(lang, "store_failed"), false)
		return
	}
	b.scopes.set(id, caseScope{gone: true})
	b.log.Info("team case deleted", "case_id", id, "user", in.User.ID)
	b.refreshLibrary(ctx)
	answer(capturePhrases.say(lang, "deleted", escape(id), in.User.ID), true)
}

// mayDelete reports whether user may delete a team case: the person who
// captured it may, and so may the members of the admin user group.
func (b *Bot) mayDelete(ctx context.Context, user string, tc store.TeamCase) (bool, error) {
	if user != "" && user == tc.CreatedBy {
		return true, nil
	}
	if b.opts.AdminGroup == "" || user == "" {
		return false, nil
	}
	var members []string
	err := b.post.call(ctx, "usergroups.users.list", "", false, func(ctx context.Context) error {
		var err error
		members, err = b.api.GetUserGroupMembersContext(ctx, b.opts.AdminGroup)
		return err
	})
	if err != nil {
		return false, err
	}
	return slices.Contains(members, user), nil
}
