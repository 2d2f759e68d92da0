package console

import (
	"errors"
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

// aggregateModel is the timeline of one aggregate: its events in seq order (the
// order the relay publishes them), which inboxes applied each, and the blocker with
// what waits behind it. It is opened from a blocked aggregate in the Overview, from
// "/agg:TYPE/ID", or with A on an event, and read again with every refresh —
// unless reading it is slow: a read that took d waits 9×d before the next, so an
// open timeline costs the database at most a tenth of a backend (the timeline's
// published part reads every published row the outbox holds unless the opt-in
// index of migration 009 exists: about 1 s at 1,000,000 published rows).
type aggregateModel struct {
	// typ and id are the aggregate as stored (the query's arguments); title is
	// their sanitized form.
	typ, id string
	title   string
	loading bool
	err     string
	table   *table
	head    []string // the lines above the table, sanitized
	// placed: the cursor has been put on the blocker (or left at the top) once;
	// later reads keep it where the operator moved it.
	placed bool
	// returnTo is the mode esc goes back to.
	returnTo mode
	// started is when the last read began; took how long it took; next the
	// earliest time a refresh reads again.
	started, next time.Time
	took          time.Duration
}

// slowRead is how long a timeline read may take before refreshes are spaced out.
const slowRead = 100 * time.Millisecond

type timelineMsg struct {
	typ, id string
	tl      inspect.Timeline
	err     error
}

// openAggregate shows the timeline of typ/id and loads it.
func (m *Model) openAggregate(typ, id string) tea.Cmd {
	a := &m.aggregate
	if a.typ != typ || a.id != id || a.table == nil {
		*a = aggregateModel{typ: typ, id: id, title: termtext.Sanitize(typ) + "/" + termtext.Sanitize(id), table: newTable(timelineColumns(nil))}
		a.table.sort = inspect.SortSeq
		m.layout()
	}
	if m.mode != modeAggregate {
		a.returnTo = modeNormal
	}
	m.mode = modeAggregate
	return m.loadAggregate()
}

func (m *Model) loadAggregate() tea.Cmd {
	a := &m.aggregate
	if a.loading {
		return nil
	}
	a.loading = true
	a.started = m.now()
	in, ctx, typ, id := m.opts.Inspector, m.opts.Context, a.typ, a.id
	return func() tea.Msg {
		tl, err := in.Timeline(ctx, typ, id, 0)
		return timelineMsg{typ: typ, id: id, tl: tl, err: err}
	}
}

// refreshAggregate reads the open timeline again (nil when none is on screen).
func (m *Model) refreshAggregate() tea.Cmd {
	if m.mode != modeAggregate || m.aggregate.table == nil || m.now().Before(m.aggregate.next) {
		return nil
	}
	return m.loadAggregate()
}

func (a *aggregateModel) set(msg timelineMsg, now time.Time) {
	if a.table == nil || msg.typ != a.typ || msg.id != a.id {
		return // the operator closed the timeline or moved on: a late read is stale
	}
	a.loading = false
	a.took = now.Sub(a.started)
	a.next = now.Add(9 * a.took)
	switch {
	case errors.Is(msg.err, inspect.ErrNotFound):
		a.err = "no event of " + a.title + " is in the outbox or the archive"
		a.table.SetRows(nil)
		a.table.loaded = true
		return
	case msg.err != nil:
		a.err = "could not load the aggregate: " + termtext.Sanitize(msg.err.Error())
		return
	}
	a.err = ""
	tl := msg.tl
	applied := map[string]string{}
	rows := make([]row, 0, len(tl.Events))
	for _, e := range tl.Events {
		r := newRow(e.Event)
		var names []string
		for _, c := range e.Consumed {
			names = append(names, termtext.Sanitize(c.Consumer))
		}
		switch {
		case len(names) > 0:
			applied[r.id] = strings.Join(names, ",")
		case len(tl.Consumers) > 0 && e.State == wire.Published:
			applied[r.id] = "none"
		}
		rows = append(rows, r)
	}
	var blocker string
	if tl.Blocker != nil {
		blocker = termtext.Sanitize(tl.Blocker.EventID)
	}
	a.table.columns = timelineColumns(&timelineMarks{applied: applied, blocker: blocker, blockerSeq: blockerSeq(tl)})
	a.table.SetRows(rows)
	if !a.placed && len(rows) > 0 {
		// Opened on what the operator came for: the blocker, not the oldest
		// published event at the top.
		a.placed = true
		for i, r := range rows {
			if tl.Blocker != nil && r.id == blocker {
				a.table.cursor = i
			}
		}
		a.table.clamp()
	}
	a.table.loaded = true
	a.head = timelineHead(tl, now)
}

func blockerSeq(tl inspect.Timeline) int64 {
	if tl.Blocker == nil {
		return 0
	}
	return tl.Blocker.Seq
}

// timelineHead is what the table does not say: how much is left out, and the
// blocker with what waits behind it since when.
func timelineHead(tl inspect.Timeline, now time.Time) []string {
	s := fmt.Sprintf("%d events", len(tl.Events))
	if tl.Before > 0 {
		s += fmt.Sprintf(" · %d earlier not listed", tl.Before)
	}
	if tl.After > 0 {
		s += fmt.Sprintf(" · %d later not listed", tl.After)
	}
	if len(tl.Consumers) > 0 {
		s += " · " + strconv.Itoa(len(tl.Consumers)) + " inboxes"
	}
	lines := []string{s}
	b := tl.Blocker
	if b == nil {
		return append(lines, "not blocked: nothing waits behind a failed or scheduled event")
	}
	why := "scheduled, next attempt in " + inspect.Until(b.AvailableAt, now)
	if b.FailedAt != nil {
		why = "failed " + inspect.Ago(*b.FailedAt, now) + " ago"
	}
	s = fmt.Sprintf("BLOCKED by %s (%s)", shortID(termtext.Sanitize(b.EventID)), why)
	if tl.Waiting > 0 && tl.WaitingSince != nil {
		s += fmt.Sprintf(" · %d waiting behind it for %s", tl.Waiting, inspect.Ago(*tl.WaitingSince, now))
	} else {
		s += " · nothing waits behind it yet"
	}
	lines = append(lines, s)
	if b.LastError != "" {
		lines = append(lines, "  "+termtext.Sanitize(b.LastError))
	}
	return lines
}

// timelineMarks is what a timeline's cells need beyond the row.
type timelineMarks struct {
	applied    map[string]string // event id → the consumers that applied it
	blocker    string
	blockerSeq int64
}

func timelineColumns(tm *timelineMarks) []column {
	if tm == nil {
		tm = &timelineMarks{}
	}
	return []column{
		{title: "SEQ", width: 7, right: true, cell: func(r row, _ time.Time) string { return strconv.FormatInt(r.seq, 10) }},
		colID,
		{title: "TYPE", maxWidth: 20, cell: func(r row, _ time.Time) string { return r.eventType }},
		{title: "STATE", width: 10, cell: func(r row, _ time.Time) string {
			switch {
			case r.id == tm.blocker:
				return strings.ToUpper(string(r.state)) + "!"
			case tm.blocker != "" && r.seq > tm.blockerSeq && r.publishedAt == nil && r.state != inspect.Archived:
				return string(r.state) + "*"
			case r.state == wire.Scheduled:
				return "sched"
			case r.state == inspect.Archived && r.publishedAt == nil:
				return inspect.UnpublishedLabel(r.lastError) // archived without being published
			}
			return string(r.state)
		}},
		colAttempts,
		{title: "KAFKA", width: 11, right: true, cell: func(r row, _ time.Time) string {
			if r.partition == nil || r.offset == nil {
				return ""
			}
			return fmt.Sprintf("[%d]@%d", *r.partition, *r.offset)
		}},
		colAge,
		{title: "APPLIED BY", cell: func(r row, _ time.Time) string { return tm.applied[r.id] }},
	}
}

// key handles the timeline's keys: moving, enter for an event's detail, esc back.
func (a *aggregateModel) key(m *Model, msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	switch {
	case key.Matches(msg, k.Back):
		m.mode = a.returnTo
		a.table = nil
		return nil
	case key.Matches(msg, k.Detail):
		if r, ok := a.table.current(); ok {
			cmd := m.openDetail(r.id)
			m.detailFrom = modeAggregate
			return cmd
		}
		return nil
	}
	a.table.Update(msg, k)
	return nil
}

func (a *aggregateModel) setSize(w, h int) {
	if a.table != nil {
		a.table.SetSize(w, max(h-1-len(a.headLines()), 2))
	}
}

// headLines is the head as drawn: a fixed three lines, so the table does not jump
// when the blocker goes away.
func (a *aggregateModel) headLines() []string {
	h := append([]string(nil), a.head...)
	for len(h) < 3 {
		h = append(h, "")
	}
	return h[:3]
}

func (a *aggregateModel) view(st styles, w int, now time.Time) string {
	title := "AGGREGATE " + a.title
	if a.loading && !a.table.loaded {
		title += " (loading…)"
	}
	if a.took > slowRead {
		title += fmt.Sprintf(" · slow read %s: every %s", a.took.Round(10*time.Millisecond), (10 * a.took).Round(100*time.Millisecond))
	}
	lines := []string{st.section.Render(fit(title, w, false))}
	if a.err != "" {
		return strings.Join(append(lines, st.bad.Render(fit(a.err, w, false))), "\n")
	}
	for i, l := range a.headLines() {
		switch {
		case i == 1 && strings.HasPrefix(l, "BLOCKED"):
			l = st.bad.Render(fit(l, w, false))
		case i == 2:
			l = st.dim.Render(fit(l, w, false))
		default:
			l = fit(l, w, false)
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n") + "\n" + a.table.View(now, st)
}

// aggregateOf reads "agg:TYPE/ID" or "TYPE/ID" typed in the Overview.
func aggregateOf(s string) (typ, id string, ok bool) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "agg:")
	typ, id, ok = strings.Cut(s, "/")
	return typ, id, ok && typ != "" && id != ""
}

// aggregateAction asks to act on the timeline's event under the cursor (or the
// one in the detail opened from it), when the action applies to its state.
func (m *Model) aggregateAction(a inspect.Action) tea.Cmd {
	t := m.aggregate.table
	var r row
	var ok bool
	switch {
	case t == nil:
	case m.mode == modeDetail:
		for _, x := range t.rows {
			if x.id == m.detail.id {
				r, ok = x, true
			}
		}
	default:
		r, ok = t.current()
	}
	if !ok {
		m.setStatus("nothing to "+string(a)+": no event here", true)
		return nil
	}
	if !slices.Contains(a.Sources(), r.state) {
		m.setStatus(fmt.Sprintf("%s does not apply to a %s event", a, r.state), true)
		return nil
	}
	m.confirm = &pendingAction{action: a, ids: []string{r.id}, from: r.state, view: m.view, returnTo: m.mode}
	m.mode = modeConfirm
	return nil
}

// aggregateActions are the action keys offered in the timeline: each applies to
// the events in some states, which aggregateAction checks.
func (m *Model) aggregateActions() []key.Binding {
	var out []key.Binding
	for _, b := range []key.Binding{m.keys.Retry, m.keys.Skip, m.keys.Park, m.keys.ResetLease} {
		if b.Enabled() {
			out = append(out, b)
		}
	}
	return out
}
