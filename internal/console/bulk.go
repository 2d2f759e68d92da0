package console

import (
	"context"
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"github.com/outboxtop/outboxtop/wire"
)

// A bulk action is retry, reset lease or replay over every event that
// matches a list's filter, not only the rows loaded: * marks the listed rows,
// a second * every matching one. It runs as a paced run (inspect.Run): in
// chunks in seq order, each chunk one audited call, so the consumers
// downstream are not flattened. Past BulkPaceAbove events it goes at
// BulkRate, said in the confirmation (which asks for the count, typed, before
// its yes); its progress row stays above the status
// line while it runs, c cancels it (the chunk in flight commits whole or not
// at all), and outboxtop ACTION --resume RUN continues it from the command
// line.
const (
	BulkPaceAbove = 1000
	BulkRate      = 100.0
)

// bulkState is the console's bulk action: what * marked and the run going.
type bulkState struct {
	// marked: every event of view matching filter (its text when marked).
	marked bool
	view   viewID
	filter string
	run    *bulkRun
}

// bulkRun is a bulk action started from the console, and then its outcome.
type bulkRun struct {
	action inspect.Action
	id     string
	// prog is the last progress the run reported.
	prog   inspect.Progress
	cancel context.CancelFunc
	ch     <-chan tea.Msg
	// over: the run ended (done, cancelled or failed); outcome says how.
	over      bool
	done      bool
	cancelled bool
	outcome   string
	bad       bool
}

type bulkStartedMsg struct {
	action inspect.Action
	id     string
	total  int64
	ch     <-chan tea.Msg
	err    error
}

type bulkProgressMsg struct{ p inspect.Progress }

type bulkDoneMsg struct {
	res inspect.PacedResult
	err error
}

// allMarked reports whether every event matching view's filter is marked:
// marked with a second * and not cleared since (esc, an action, a new filter).
func (m *Model) allMarked(v viewID) bool {
	t := m.tables[v]
	return m.bulk.marked && m.bulk.view == v && t != nil && len(t.markOrder) > 0 && m.filters[v].text == m.bulk.filter
}

// bulkApplies: action a can run over a whole filter.
func bulkApplies(a inspect.Action) bool { return slices.Contains(inspect.PacedActions, a) }

// markAllKey is *: every listed row; pressed again when they are all marked
// and the filter matches more, every matching event.
func (m *Model) markAllKey(t *table) {
	total := m.listTotal(m.view)
	lv := listViews[m.view]
	more := t.more || total.Value > int64(len(t.rows))
	if len(t.rows) > 0 && len(t.markOrder) >= len(t.rows) && more && lv != nil && slices.ContainsFunc(lv.actions, bulkApplies) {
		m.bulk.marked, m.bulk.view, m.bulk.filter = true, m.view, m.filters[m.view].text
		m.setStatus(fmt.Sprintf("marked all %s matching: %s acts on every one (paced past %d)", total, bulkKeys(lv), BulkPaceAbove), false)
		return
	}
	n := t.markAll()
	if more && lv != nil && slices.ContainsFunc(lv.actions, bulkApplies) {
		m.setStatus(fmt.Sprintf("marked all %d listed (* again: all %s matching)", n, total), false)
		return
	}
	m.setStatus(markedText(n, t.more), false)
}

// bulkKeys names the keys of the bulk actions of a view ("r", "l", "R").
func bulkKeys(lv *listView) string {
	var keys []string
	for _, a := range lv.actions {
		switch a {
		case inspect.Retry:
			keys = append(keys, "r")
		case inspect.ResetLease:
			keys = append(keys, "l")
		case inspect.Replay:
			keys = append(keys, "R")
		}
	}
	return strings.Join(keys, " or ")
}

// markedInfo is the list line's marks: "all 20000 marked" for a bulk mark.
func (m *Model) markedInfo(t *table) string {
	if m.allMarked(m.view) {
		return " · all " + m.listTotal(m.view).String() + " marked"
	}
	if n := len(t.markOrder); n > 0 {
		return fmt.Sprintf(" · %d marked", n)
	}
	return ""
}

// bulkAction is the confirmation of action a over every event the view's
// filter matches.
func (m *Model) bulkAction(a inspect.Action, lv *listView) (tea.Cmd, bool) {
	if !bulkApplies(a) {
		m.setStatus(fmt.Sprintf("%s acts on rows you mark (space, *): all matching is for retry, reset lease and replay (esc clears)", a), true)
		return nil, true
	}
	if r := m.bulk.run; r != nil && !r.over {
		m.setStatus(fmt.Sprintf("a bulk %s is running (run %s): c cancels it first", r.action, r.id), true)
		return nil, true
	}
	total := m.listTotal(m.view)
	p := &pendingAction{action: a, from: lv.state, view: m.view, bulk: true, bulkCount: total,
		bulkFilter: m.filters[m.view].text}
	if total.Value > BulkPaceAbove || total.Bound == inspect.LowerBound || total.Estimate {
		p.rate = BulkRate
	}
	m.confirm = p
	m.mode = modeConfirm
	return nil, true
}

// bulkPrompt is the question of a bulk action, with its count; then its pace
// and the time it would take, and its filter.
func (p *pendingAction) bulkPrompt() (what, detail string) {
	what = fmt.Sprintf("%s all %s matching events", verb(p.action), p.bulkCount)
	if p.from == wire.Pending && p.action == inspect.Retry {
		// Retry takes the scheduled ones; the ready ones are left alone.
		what = fmt.Sprintf("Retry the scheduled of all %s matching events", p.bulkCount)
	}
	if p.rate > 0 {
		_, _, d := inspect.PacedEstimate(p.bulkCount.Value, 0, p.rate, 0)
		detail = fmt.Sprintf("at %s/s, ~%s · ", trimRate(p.rate), age(d))
	}
	if p.bulkFilter == "" {
		return what, detail + "no filter"
	}
	return what, detail + p.bulkFilter
}

func trimRate(r float64) string { return strings.TrimSuffix(fmt.Sprintf("%.1f", r), ".0") }

// bulkFrom is the state a bulk action is fenced to in a view: the Pending
// view's events that retry can take are the scheduled ones.
func bulkFrom(a inspect.Action, s wire.State) wire.State {
	if s == wire.Pending {
		return wire.Scheduled
	}
	return s
}

// runBulk starts the confirmed bulk action p.
func (m *Model) runBulk(p *pendingAction, newID bool) tea.Cmd {
	f := m.filters[p.view].filter
	f.All = f.IsZero()
	req := inspect.PacedRequest{
		Request: inspect.Request{Action: p.action, Filter: f, From: bulkFrom(p.action, p.from), Actor: m.opts.Actor, NewID: newID},
		Rate:    p.rate,
	}
	if t := m.tables[p.view]; t != nil {
		t.clearMarks()
	}
	m.bulk.marked = false
	ctx, cancel := context.WithCancel(m.opts.Context)
	m.bulk.run = &bulkRun{action: p.action, cancel: cancel, prog: inspect.Progress{Action: p.action, Total: p.bulkCount.Value, Target: p.rate, ETA: -1}}
	m.layout()
	m.setStatus(fmt.Sprintf("%s: starting a run over %s events…", p.action, p.bulkCount), false)
	in := m.opts.Inspector
	return func() tea.Msg {
		run, err := in.NewRun(ctx, req)
		if err != nil {
			return bulkStartedMsg{action: req.Action, err: err}
		}
		ch := make(chan tea.Msg, 1)
		go func() {
			defer run.Close()
			res, err := run.Do(ctx, func(p inspect.Progress) {
				select {
				case ch <- bulkProgressMsg{p}:
				default: // the console has not read the last one: the next will do
				}
			})
			select {
			case ch <- bulkDoneMsg{res, err}:
			case <-m.opts.Context.Done():
			}
		}()
		return bulkStartedMsg{action: req.Action, id: run.ID(), total: run.Total(), ch: ch}
	}
}

// waitBulk reads the run's next message.
func waitBulk(ch <-chan tea.Msg) tea.Cmd {
	return func() tea.Msg { return <-ch }
}

// bulkMsg handles a bulk run's messages.
func (m *Model) bulkMsg(msg tea.Msg) tea.Cmd {
	r := m.bulk.run
	if r == nil {
		return nil
	}
	switch msg := msg.(type) {
	case bulkStartedMsg:
		if msg.err != nil {
			r.over, r.bad = true, true
			r.outcome = fmt.Sprintf("%s failed to start: %s", msg.action, termtext.Sanitize(msg.err.Error()))
			r.cancel()
			m.setStatus(r.outcome, true)
			return m.startLoad()
		}
		r.id, r.ch = msg.id, msg.ch
		r.prog.Run, r.prog.Total = msg.id, msg.total
		m.setStatus(fmt.Sprintf("%s run %s started: c cancels it; outboxtop %s --resume %s continues it", r.action, r.id, r.action, r.id), false)
		return waitBulk(r.ch)
	case bulkProgressMsg:
		r.prog = msg.p
		return tea.Batch(waitBulk(r.ch), m.startLoad())
	case bulkDoneMsg:
		r.over = true
		r.cancel()
		if msg.res.Run != "" {
			r.prog = msg.res.Progress
		}
		again := fmt.Sprintf("outboxtop %s --resume %s", r.action, r.id)
		switch {
		case msg.err != nil && r.cancelled:
			r.outcome = fmt.Sprintf("%s stopped at %d/%d (run %s) · c closes the row", r.action, r.prog.Done, r.prog.Total, r.id)
		case msg.err != nil:
			r.bad = true
			r.outcome = fmt.Sprintf("%s run %s stopped at %d/%d: %s · %s", r.action, r.id, r.prog.Done, r.prog.Total,
				termtext.Sanitize(msg.err.Error()), again)
		default:
			r.done = true
			r.outcome = fmt.Sprintf("%s run %s done: %d of %d changed in %s", r.action, r.id, msg.res.Changed, msg.res.Done, age(msg.res.Elapsed))
		}
		m.setStatus(r.outcome, r.bad)
		if r.action == inspect.Replay {
			m.publishedFloor = 0
		}
		return m.startLoad()
	}
	return nil
}

// bulkKey is c: cancel the bulk run going, or close the row of one that
// ended.
func (m *Model) bulkKey(msg tea.KeyPressMsg) bool {
	r := m.bulk.run
	if r == nil || msg.String() != "c" {
		return false
	}
	if r.over {
		m.bulk.run = nil
		m.setStatus("", false)
		m.layout()
		return true
	}
	r.cancelled = true
	r.cancel()
	m.setStatus(fmt.Sprintf("cancelling %s run %s after the chunk in flight…", r.action, r.id), false)
	return true
}

// bulkRow is the progress row of a bulk run, "" when there is none:
//
//	retry 8500/20000 42% [████░░░░░░] 100/s eta 1m55s · run 6930a1b2-3f9a2c · c stops
func (m *Model) bulkRow() string {
	r := m.bulk.run
	if r == nil {
		return ""
	}
	p := r.prog
	if r.over {
		if r.done || r.id == "" {
			return fit(" "+r.outcome+" · c closes", m.width, false)
		}
		// Stopped: how to go on matters most, so shorter forms are tried until
		// the command fits whole.
		word := "stopped"
		if r.bad {
			word = "failed"
		}
		again := fmt.Sprintf("outboxtop %s --resume %s", r.action, r.id)
		for _, s := range []string{
			fmt.Sprintf(" %s %s at %d/%d · %s · c closes", r.action, word, p.Done, p.Total, again),
			fmt.Sprintf(" %s %s %d/%d · %s", r.action, word, p.Done, p.Total, again),
		} {
			if ansi.StringWidth(s) <= m.width {
				return s
			}
		}
		return fit(" "+again, m.width, false)
	}
	pct := 100
	if p.Total > 0 {
		pct = int(100 * min(p.Done, p.Total) / p.Total)
	}
	rate := p.Rate
	if rate <= 0 {
		rate = p.Target
	}
	rateText := "–/s"
	if rate > 0 {
		rateText = trimRate(rate) + "/s"
	}
	eta := "–"
	switch {
	case p.Total > 0 && p.Done >= p.Total:
		eta = "0s"
	case p.ETA >= 0:
		eta = age(p.ETA)
	}
	id := r.id
	if id == "" {
		id = "starting"
	}
	// The bar goes first when the line is too wide, then it is cut.
	var s string
	for _, cells := range []int{10, 0} {
		bar := ""
		if cells > 0 {
			full := pct * cells / 100
			bar = " [" + strings.Repeat("█", full) + strings.Repeat("░", cells-full) + "]"
		}
		s = fmt.Sprintf(" %s %d/%d %d%%%s %s eta %s · run %s · c stops", r.action, p.Done, p.Total, pct, bar, rateText, eta, id)
		if r.cancelled {
			s = fmt.Sprintf(" %s %d/%d %d%%%s · run %s · stopping after this chunk…", r.action, p.Done, p.Total, pct, bar, id)
		}
		if ansi.StringWidth(s) <= m.width {
			break
		}
	}
	return fit(s, m.width, false)
}
