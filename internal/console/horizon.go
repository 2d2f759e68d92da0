package console

import (
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// horizonVM is the xmin horizon when it is held (inspect.Horizon.Held past
// inspect.HorizonWarnAfter): the holder as read, for T to end, and its text,
// sanitized.
type horizonVM struct {
	holder inspect.XminHolder // as read: pid, backend_start and xact_start fence T
	who    string             // sanitized: user@application, a slot's or gid's name
	state  string             // sanitized
	dead   int64
	crit   bool
}

func newHorizonVM(h inspect.Horizon) *horizonVM {
	x, held := h.Held(inspect.HorizonWarnAfter)
	if !held {
		return nil
	}
	vm := &horizonVM{holder: x, dead: h.OutboxDeadRows, state: termtext.Sanitize(x.State),
		crit: x.Timed() && x.Age.Duration() > inspect.HorizonCritAfter}
	switch x.Kind {
	case inspect.HolderSlot, inspect.HolderPrepared:
		vm.who = termtext.Sanitize(x.Name)
	default:
		vm.who = termtext.Sanitize(x.User) + "@" + termtext.Sanitize(x.Application)
	}
	return vm
}

// horizonLine is the Overview's line for a held horizon, fit for w columns:
// how long, by whom, the dead rows in outbox_event now, and what ends it. The
// holder's name is what gives way when the line is too wide. since moves a
// transaction's age on between refreshes.
func (m *Model) horizonLine(w int, since time.Duration) string {
	h := m.overview.horizon
	if h == nil {
		return ""
	}
	x := h.holder
	xids := compact(inspect.Count{Value: x.XminAge}) + " xids"
	dead := " · " + compact(inspect.Count{Value: h.dead}) + " dead"
	var head, tail string
	switch {
	case x.Kind == inspect.HolderSlot:
		end := " · drop it"
		if x.SlotActive != nil && *x.SlotActive && x.Holds == "xmin" {
			end = " · end on standby" // a standby's hot_standby_feedback sets it
		}
		head, tail = "horizon held by slot ", fmt.Sprintf(" (%s, %s)%s", x.Holds, xids, dead)+end
	case x.Kind == inspect.HolderPrepared:
		head, tail = "horizon held "+age(x.Age.Duration()+since)+" by prepared xact ", dead+" · ROLLBACK PREPARED"
	case x.Hidden:
		head, tail = fmt.Sprintf("horizon held (%s) by pid %d ", xids, x.PID), " (age hidden)"+dead
	case x.Kind == inspect.HolderStandby:
		head, tail = fmt.Sprintf("horizon held by standby pid %d ", x.PID), " ("+xids+")"+dead
	default:
		head, tail = fmt.Sprintf("horizon held %s by pid %d ", age(x.Age.Duration()+since), x.PID), " ("+shortState(h.state)+")"+dead
	}
	switch {
	case x.Kind == inspect.HolderStandby:
		// Ending the walsender only makes the standby reconnect: the query
		// holding the xmin runs on the standby.
		tail += " · end on standby"
	case x.Backend():
		if m.keys.Terminate.Enabled() {
			tail += " · T end it"
		} else {
			tail += " · read-only"
		}
	}
	who := h.who
	if room := w - ansi.StringWidth(head+tail); ansi.StringWidth(who) > room {
		who = ansi.Truncate(who, max(room, 4), "…")
	}
	s := head + who + tail
	if h.crit {
		return m.styles.bad.Render(s)
	}
	return m.styles.warn.Render(s)
}

// shortState shortens pg_stat_activity's "idle in transaction" states so the
// line fits 80 columns.
func shortState(s string) string { return strings.Replace(s, "idle in transaction", "idle in xact", 1) }

// terminateKey asks to end the backend that holds the horizon: the confirm
// line names its pid, application and age, as the other actions name their
// events.
func (m *Model) terminateKey() tea.Cmd {
	h := m.overview.horizon
	switch {
	case h == nil:
		m.setStatus("the xmin horizon is not held: nothing to end", false)
		return nil
	case !h.holder.Backend():
		m.setStatus(fmt.Sprintf("the horizon's holder is a %s, not a backend: %s", h.holder.Kind, endWith(h.holder)), true)
		return nil
	}
	x := h.holder
	m.confirm = &pendingAction{terminate: &x, view: m.view, terminateText: fmt.Sprintf("%s, %s", h.who, h.ageText(m.overview.since(m.now())))}
	m.mode = modeConfirm
	return nil
}

func (h *horizonVM) ageText(since time.Duration) string {
	if h.holder.Hidden {
		return "age hidden"
	}
	if h.holder.Kind == inspect.HolderStandby {
		return "standby feedback"
	}
	return h.state + ", open " + age(h.holder.Age.Duration()+since)
}

func endWith(x inspect.XminHolder) string {
	if x.Kind == inspect.HolderSlot {
		return "drop the slot (pg_drop_replication_slot) once nothing reads it"
	}
	return "ROLLBACK PREPARED as its owner"
}

// terminateDoneMsg is the end of a T.
type terminateDoneMsg struct {
	pid int32
	res inspect.TerminateResult
	err error
}

// runTerminate ends the backend off the UI loop (inspect.TerminateBackend
// re-checks that the pid is still the backend and transaction seen).
func (m *Model) runTerminate(x inspect.XminHolder) tea.Cmd {
	in, ctx, actor := m.opts.Inspector, m.opts.Context, m.opts.Actor
	m.setStatus(fmt.Sprintf("ending pid %d…", x.PID), false)
	return func() tea.Msg {
		res, err := in.TerminateBackend(ctx, inspect.TerminateRequest{Holder: x, Actor: actor, Reason: "xmin horizon held (console)"})
		return terminateDoneMsg{pid: x.PID, res: res, err: err}
	}
}

func (m *Model) terminateDone(msg terminateDoneMsg) tea.Cmd {
	if msg.err != nil {
		m.setStatus(fmt.Sprintf("pid %d not ended: %s", msg.pid, termtext.Sanitize(msg.err.Error())), true)
	} else {
		m.setStatus(fmt.Sprintf("ended pid %d (audit #%d)", msg.pid, msg.res.AuditID), false)
	}
	return m.startLoad()
}
