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

// Park and skip ask for a reason on the prompt line (recorded in the audit row and
// in the event's last_error); the other actions ask y/N.
func needsReason(a inspect.Action) bool {
	return a == inspect.Park || a == inspect.Skip || a == actionCorrect
}

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
	// reason is what is typed for park and skip.
	reason []rune
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

// prompt is the confirm line: the action, the count, the answer and then the ids,
// so that a narrow terminal cuts the ids, not the question.
func (p *pendingAction) prompt() string {
	if p.pause == "pause" {
		return "Pause the relay? Nothing is published until it is resumed [y/N]"
	}
	if p.pause == "resume" {
		return "Resume the relay? [y/N]"
	}
	if p.terminate != nil {
		return fmt.Sprintf("End pid %d with pg_terminate_backend? [y/N] (%s)", p.terminate.PID, p.terminateText)
	}
	if p.correction != nil {
		return p.correction.prompt(p.reason)
	}
	if p.bulk {
		return p.bulkPrompt()
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
	if needsReason(p.action) {
		return fmt.Sprintf("%s %s (%s)? reason: %s█", verb(p.action), events(len(p.ids)), list, string(p.reason))
	}
	if p.action == inspect.Replay {
		// Two ways to say yes: the same ids (inboxes skip them) or new ones
		// (every consumer applies them again).
		return fmt.Sprintf("Replay %s? y same ids · i new ids · [N] (%s)", events(len(p.ids)), list)
	}
	return fmt.Sprintf("%s %s? [y/N] (%s)", verb(p.action), events(len(p.ids)), list)
}

// reasonKey edits the reason of a park or skip: enter runs it once a reason is
// typed, esc cancels, other keys type.
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

// confirmKey: y runs the action; any other key cancels it.
func (m *Model) confirmKey(msg tea.KeyPressMsg) tea.Cmd {
	p := m.confirm
	if p.action != "" && needsReason(p.action) {
		if cmd, typing := m.reasonKey(msg); typing {
			return cmd
		}
	}
	m.confirm, m.mode = nil, modeNormal
	if m.detail.id != "" && p.view == m.view && len(p.ids) == 1 && p.ids[0] == m.detail.id {
		m.mode = modeDetail
	}
	if p.returnTo != modeNormal {
		m.mode = p.returnTo
	}
	confirmed := msg.String() == "y"
	newID := p.action == inspect.Replay && msg.String() == "i"
	confirmed = confirmed || newID
	if p.action != "" && needsReason(p.action) {
		confirmed = msg.String() == "enter"
	}
	if !confirmed {
		m.setStatus("cancelled: nothing changed", false)
		return nil
	}
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
