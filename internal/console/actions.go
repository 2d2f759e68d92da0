package console

import (
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// Every action is confirmed on the prompt line by typing an answer and enter,
// so that no run of stray keys (typing meant for another window, a keyboard
// leaned on) can change anything: park, skip and correct first ask
// for a reason (recorded in the audit row and in the event's last_error), and
// enter moves on; a bulk action over a whole filter then asks for its count,
// typed exactly; and then every action asks for yes (for a replay, yes for the
// same ids or new for new ones) and enter. A key that does not continue the
// answer cancels, and so does enter before a whole one: nothing changes.
func needsReason(a inspect.Action) bool {
	return a == inspect.Park || a == inspect.Skip || a == actionCorrect
}

// The answers to a confirmation: yes, or for a replay new (new ids).
const (
	answerYes = "yes"
	answerNew = "new"
)

// stage is the step of a confirmation the prompt line is at.
type stage int

const (
	stageReason stage = iota // typing the reason of a park, skip or correct
	stageCount               // typing the count of a bulk action
	stageAnswer              // typing yes (or new)
)

// pendingAction is an action waiting for its confirmation, bound to the ids
// captured when the key was pressed.
type pendingAction struct {
	// pause, when set, is "pause" or "resume": the relay, not events.
	pause  string
	action inspect.Action
	ids    []string
	from   wire.State
	view   viewID
	// returnTo is the mode after the prompt when it is not the normal one (the
	// aggregate timeline, or a detail opened from it).
	returnTo mode
	// reason is what is typed for park, skip and correct; reasonDone once
	// enter took it, countDone once a bulk action's count was typed.
	reason     []rune
	reasonDone bool
	countDone  bool
	// typed is what is typed toward the answer of the stage (the count, yes).
	typed []rune
	// terminate, when set, is the backend holding the xmin horizon to end, and
	// terminateText its application, state and age (sanitized).
	terminate     *inspect.XminHolder
	terminateText string
	// bulk: the action is on every event matching the view's filter
	// (bulkFilter, bulk.go), bulkCount of them as the list counted, paced at
	// rate (0: not paced).
	bulk       bool
	bulkCount  inspect.Count
	bulkFilter string
	rate       float64
	// correction, when set, is a corrected payload to send (correct.go).
	correction *pendingCorrection
}

type actionDoneMsg struct {
	req    pendingAction
	newID  bool // a replay that inserted new events
	result inspect.Result
	err    error
}

func (m *Model) actionFor(msg tea.KeyPressMsg, k KeyMap) (inspect.Action, bool) {
	switch {
	case key.Matches(msg, k.Retry):
		return inspect.Retry, true
	case key.Matches(msg, k.ResetLease):
		return inspect.ResetLease, true
	case key.Matches(msg, k.Archive):
		return inspect.Archive, true
	case key.Matches(msg, k.Park):
		return inspect.Park, true
	case key.Matches(msg, k.Skip):
		return inspect.Skip, true
	case key.Matches(msg, k.Replay):
		return inspect.Replay, true
	}
	return "", false
}

// actionKey handles r, l, a, x, s and R: refused in read-only mode, else a confirm
// prompt for the marked events (or the one under the cursor, or the one in detail).
func (m *Model) actionKey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	if m.bulkKey(msg) {
		return nil, true
	}
	if m.opts.ReadOnly {
		if _, ok := m.actionFor(msg, m.allKeys); ok || key.Matches(msg, m.allKeys.Pause) || key.Matches(msg, m.allKeys.Terminate) ||
			key.Matches(msg, m.allKeys.Correct) {
			m.setStatus("read-only console: actions are refused", true)
			return nil, true
		}
		return nil, false
	}
	a, ok := m.actionFor(msg, m.keys)
	if !ok {
		return nil, false
	}
	if m.mode == modeAggregate || (m.mode == modeDetail && m.detailFrom == modeAggregate) {
		return m.aggregateAction(a), true
	}
	lv := listViews[m.view]
	if lv == nil {
		m.setStatus(fmt.Sprintf("%s works on events: open %s", a, viewsFor(a)), true)
		return nil, true
	}
	applies := false
	for _, x := range lv.actions {
		applies = applies || x == a
	}
	if !applies {
		m.setStatus(fmt.Sprintf("%s does not apply to %s events: open %s", a, strings.ToLower(lv.title), viewsFor(a)), true)
		return nil, true
	}
	if m.mode == modeNormal && m.allMarked(m.view) {
		return m.bulkAction(a, lv)
	}
	var ids []string
	if m.mode == modeDetail {
		if m.detail.id != "" {
			ids = []string{m.detail.id}
		}
	} else {
		ids = m.tables[m.view].targets()
	}
	if len(ids) == 0 {
		m.setStatus("nothing to "+string(a)+": no event here", true)
		return nil, true
	}
	m.confirm = &pendingAction{action: a, ids: ids, from: lv.state, view: m.view}
	m.mode = modeConfirm
	return nil, true
}

// viewsFor names the views where action a applies, in tab order ("Failed or Pending").
func viewsFor(a inspect.Action) string {
	var names []string
	for v := range viewArchived + 1 {
		if lv := listViews[v]; lv != nil && slices.Contains(lv.actions, a) {
			names = append(names, itoa(int(v.tab())+1)+" "+lv.title)
		}
	}
	switch len(names) {
	case 0:
		return "no view"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// stage is the step the confirmation is at.
func (p *pendingAction) stage() stage {
	switch {
	case p.action != "" && needsReason(p.action) && !p.reasonDone:
		return stageReason
	case p.bulk && !p.countDone:
		return stageCount
	}
	return stageAnswer
}

// answers are what may be typed at the stage: the bulk action's count, or yes
// (and new for a replay); none while a reason is typed.
func (p *pendingAction) answers() []string {
	switch p.stage() {
	case stageCount:
		return []string{strconv.FormatInt(p.bulkCount.Value, 10)}
	case stageAnswer:
		if p.action == inspect.Replay {
			return []string{answerYes, answerNew}
		}
		return []string{answerYes}
	}
	return nil
}

// ask is what the prompt asks to type at the stage, and what is typed so far.
func (p *pendingAction) ask() string {
	switch p.stage() {
	case stageCount:
		return fmt.Sprintf("type %d + enter: %s█", p.bulkCount.Value, string(p.typed))
	case stageAnswer:
		if p.action == inspect.Replay {
			return "type yes (same ids) or new (new ids) + enter: " + string(p.typed) + "█"
		}
	}
	return "type yes + enter: " + string(p.typed) + "█"
}

// prompt is the confirm line.
func (p *pendingAction) prompt() string {
	head, tail := p.promptParts()
	return head + tail
}

// promptParts is the confirm line in two: the action, the count and what to
// type, up to the cursor; then the ids (and the reason once typed), so that a
// narrow terminal cuts the ids, not the question.
func (p *pendingAction) promptParts() (head, tail string) {
	if p.pause == "pause" {
		return "Pause the relay? Nothing is published until it is resumed; " + p.ask(), ""
	}
	if p.pause == "resume" {
		return "Resume the relay? " + p.ask(), ""
	}
	if p.terminate != nil {
		return fmt.Sprintf("End pid %d with pg_terminate_backend? %s", p.terminate.PID, p.ask()), " (" + p.terminateText + ")"
	}
	reason := ""
	if p.action != "" && needsReason(p.action) {
		reason = " reason: " + string(p.reason)
	}
	if p.correction != nil {
		if p.stage() == stageReason {
			return p.correction.prompt(p.reason), ""
		}
		return fmt.Sprintf("Correct %s? %s", shortID(p.correction.id), p.ask()), " (" + p.correction.changes() + ")" + reason
	}
	if p.bulk {
		what, detail := p.bulkPrompt()
		return what + "? " + p.ask(), " (" + detail + ")"
	}
	shown := p.ids
	if len(shown) > 3 {
		shown = shown[:3]
	}
	short := make([]string, len(shown))
	for i, id := range shown {
		short[i] = shortID(id)
	}
	list := strings.Join(short, ", ")
	if n := len(p.ids) - len(shown); n > 0 {
		list += fmt.Sprintf(" +%d more", n)
	}
	if p.stage() == stageReason {
		return fmt.Sprintf("%s %s (%s)? reason: %s█", verb(p.action), events(len(p.ids)), list, string(p.reason)), ""
	}
	return fmt.Sprintf("%s %s? %s", verb(p.action), events(len(p.ids)), p.ask()), " (" + list + ")" + reason
}

// reasonKey edits the reason of a park, skip or correct: enter goes on to the
// confirmation once a reason is typed, esc cancels, other keys type.
func (m *Model) reasonKey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	p := m.confirm
	switch msg.String() {
	case "enter":
		if strings.TrimSpace(string(p.reason)) == "" {
			m.setStatus("", false)
			return nil, true // the prompt stays: a reason is required
		}
		return nil, false
	case "esc":
		return nil, false
	case "backspace":
		if n := len(p.reason); n > 0 {
			p.reason = p.reason[:n-1]
		}
		return nil, true
	case "ctrl+u":
		p.reason = nil
		return nil, true
	}
	if t := msg.Key().Text; t != "" && len(p.reason) < 200 {
		p.reason = append(p.reason, []rune(termtext.Sanitize(t))...)
	}
	return nil, true
}

func verb(a inspect.Action) string {
	switch a {
	case inspect.ResetLease:
		return "Reset the lease of"
	case inspect.Skip:
		return "Skip (archive unpublished)"
	}
	return strings.ToUpper(string(a[:1])) + string(a[1:])
}

func events(n int) string {
	if n == 1 {
		return "1 event"
	}
	return strconv.Itoa(n) + " events"
}

func itoa(n int) string { return strconv.Itoa(n) }

// confirmKey takes a key at the prompt line. The reason is typed and enter
// moves on; an answer (the count, yes, new) is typed only as far as it goes,
// and enter after a whole one moves on or runs the action; any other key
// cancels it.
func (m *Model) confirmKey(msg tea.KeyPressMsg) tea.Cmd {
	p := m.confirm
	answer := ""
	switch p.stage() {
	case stageReason:
		if cmd, typing := m.reasonKey(msg); typing {
			return cmd
		}
		if msg.String() == "enter" {
			p.reasonDone = true
			return nil
		}
	default:
		typed := string(p.typed)
		if msg.String() == "enter" {
			if slices.Contains(p.answers(), typed) {
				if p.stage() == stageCount {
					p.countDone, p.typed = true, nil
					return nil
				}
				answer = typed
			}
		} else if t := msg.Key().Text; t != "" && slices.ContainsFunc(p.answers(), func(a string) bool { return strings.HasPrefix(a, typed+t) }) {
			p.typed = append(p.typed, []rune(t)...)
			return nil
		}
	}
	m.confirm, m.mode = nil, modeNormal
	if m.detail.id != "" && p.view == m.view && len(p.ids) == 1 && p.ids[0] == m.detail.id {
		m.mode = modeDetail
	}
	if p.returnTo != modeNormal {
		m.mode = p.returnTo
	}
	if answer == "" {
		m.setStatus("cancelled: nothing changed", false)
		return nil
	}
	newID := p.action == inspect.Replay && answer == answerNew
	if p.pause != "" {
		return m.runPause(p.pause)
	}
	if p.terminate != nil {
		return m.runTerminate(*p.terminate)
	}
	if p.correction != nil {
		return m.runCorrection(*p.correction, strings.TrimSpace(string(p.reason)))
	}
	if p.bulk {
		return m.runBulk(p, newID)
	}
	m.setStatus(fmt.Sprintf("%s %s…", p.action, events(len(p.ids))), false)
	in, ctx := m.opts.Inspector, m.opts.Context
	req := inspect.Request{Action: p.action, IDs: p.ids, From: p.from, Actor: m.opts.Actor, NewID: newID}
	if needsReason(p.action) {
		req.Reason = strings.TrimSpace(string(p.reason))
	}
	if p.action == inspect.Archive {
		req.From = ""
	}
	if p.action == inspect.Skip && p.from == wire.Pending {
		// In Pending the events that block an aggregate are the scheduled ones;
		// a ready event is left alone and counted as such.
		req.From = wire.Scheduled
	}
	return func() tea.Msg {
		res, err := in.Do(ctx, req)
		return actionDoneMsg{req: *p, newID: newID, result: res, err: err}
	}
}

func (m *Model) actionDone(msg actionDoneMsg) tea.Cmd {
	m.aggregate.next = time.Time{} // an open timeline shows the action's effect at once, however slow its reads
	if msg.err != nil {
		m.setStatus(fmt.Sprintf("%s failed: %s", msg.req.action, termtext.Sanitize(msg.err.Error())), true)
		return m.startLoad()
	}
	s := fmt.Sprintf("%s: %d of %s done (audit #%d)", msg.req.action, msg.result.Rows, events(len(msg.req.ids)), msg.result.AuditID)
	if left := int64(len(msg.req.ids)) - msg.result.Rows; left > 0 {
		s += fmt.Sprintf("; %d had left %s and were not touched", left, msg.req.from)
	}
	m.setStatus(s, false)
	if msg.req.action == inspect.Replay && msg.newID && len(msg.result.EventIDs) > 0 {
		short := make([]string, 0, 3)
		for _, id := range msg.result.EventIDs[:min(3, len(msg.result.EventIDs))] {
			short = append(short, shortID(termtext.Sanitize(id)))
		}
		s += "; new ids " + strings.Join(short, ", ")
		m.setStatus(s, false)
	}
	if msg.req.action == inspect.Archive || msg.req.action == inspect.Replay {
		m.publishedFloor = 0 // the published total went down for real
	}
	if t := m.tables[msg.req.view]; t != nil {
		t.clearMarks()
	}
	if m.mode == modeDetail && m.detail.id != "" {
		return tea.Batch(m.startLoad(), m.openDetail(m.detail.id))
	}
	return m.startLoad()
}
