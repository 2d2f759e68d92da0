package tui

import (
	"fmt"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/outboxtop/outboxtop/inspect"
	"github.com/outboxtop/outboxtop/internal/eventstate"
)

// ConsoleReason is the reason recorded for park and skip done from the console.
const ConsoleReason = "from the console"

// pendingAction is an action waiting for its confirmation, bound to the ids
// captured when the key was pressed.
type pendingAction struct {
	action inspect.Action
	ids    []string
	from   eventstate.State
	view   viewID
}

type actionDoneMsg struct {
	req    pendingAction
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
	}
	return "", false
}

// actionKey handles r, l, a, x and s: refused in read-only mode, else a confirm
// prompt for the marked events (or the one under the cursor, or the one in detail).
func (m *Model) actionKey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	if m.opts.ReadOnly {
		if _, ok := m.actionFor(msg, m.allKeys); ok || key.Matches(msg, m.allKeys.Pause) {
			m.setStatus("read-only console: actions are refused", true)
			return nil, true
		}
		return nil, false
	}
	a, ok := m.actionFor(msg, m.keys)
	if !ok {
		return nil, false
	}
	lv := listViews[m.view]
	if lv == nil {
		m.setStatus(fmt.Sprintf("%s works on events: open Pending, Leased, Failed or Published", a), true)
		return nil, true
	}
	applies := false
	for _, x := range lv.actions {
		applies = applies || x == a
	}
	if !applies {
		m.setStatus(fmt.Sprintf("%s does not apply to %s events", a, strings.ToLower(lv.title)), true)
		return nil, true
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

// prompt is the confirm line: the action, the count and the ids.
func (p *pendingAction) prompt() string {
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
	return fmt.Sprintf("%s %s (%s)? y confirms, any other key cancels [y/N]", verb(p.action), events(len(p.ids)), list)
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
	m.confirm, m.mode = nil, modeNormal
	if m.detail.id != "" && p.view == m.view && len(p.ids) == 1 && p.ids[0] == m.detail.id {
		m.mode = modeDetail
	}
	if msg.String() != "y" {
		m.setStatus("cancelled: nothing changed", false)
		return nil
	}
	m.setStatus(fmt.Sprintf("%s %s…", p.action, events(len(p.ids))), false)
	in, ctx := m.opts.Inspector, m.opts.Context
	req := inspect.Request{Action: p.action, IDs: p.ids, From: p.from, Actor: m.opts.Actor}
	if p.action == inspect.Park || p.action == inspect.Skip {
		req.Reason = ConsoleReason
	}
	if p.action == inspect.Archive {
		req.From = ""
	}
	return func() tea.Msg {
		res, err := in.Do(ctx, req)
		return actionDoneMsg{req: *p, result: res, err: err}
	}
}

func (m *Model) actionDone(msg actionDoneMsg) tea.Cmd {
	if msg.err != nil {
		m.setStatus(fmt.Sprintf("%s failed: %s", msg.req.action, Sanitize(msg.err.Error())), true)
		return m.startLoad()
	}
	s := fmt.Sprintf("%s: %d of %s done (audit #%d)", msg.req.action, msg.result.Rows, events(len(msg.req.ids)), msg.result.AuditID)
	if left := int64(len(msg.req.ids)) - msg.result.Rows; left > 0 {
		s += fmt.Sprintf("; %d had left %s and were not touched", left, msg.req.from)
	}
	m.setStatus(s, false)
	if t := m.tables[msg.req.view]; t != nil {
		t.clearMarks()
	}
	if m.mode == modeDetail && m.detail.id != "" {
		return tea.Batch(m.startLoad(), m.openDetail(m.detail.id))
	}
	return m.startLoad()
}
