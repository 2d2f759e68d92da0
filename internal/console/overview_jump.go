package console

import (
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// overviewTarget is a line of the Overview the cursor can rest on, and what enter
// opens from it: a blocked aggregate (its timeline), an error group (Failed,
// filtered by the error) or an event type (its list, filtered by the type).
type overviewTarget struct {
	kind targetKind
	i    int // index into the overview's list of that kind
}

type targetKind int

// overviewPane is what the Overview shows under the counts. At 80×24 one pane's
// sections fill the room, so t cycles them; a taller terminal shows more of each.
type overviewPane int

const (
	// paneIncident: the blocked aggregates and the error groups, then (room
	// permitting) the breakdowns and the tables.
	paneIncident overviewPane = iota
	// paneTypes: the attempts histogram and the unpublished events by type.
	paneTypes
	// paneErrors: the failed events grouped by error, and the tables.
	paneErrors
	paneCount
)

// next names the pane t shows next, for the footer.
func (p overviewPane) next() string {
	return [paneCount]string{"types", "errors", "blocked"}[p]
}

const (
	targetBlocked targetKind = iota
	targetError
	targetType
)

// typeVM is one event type's unpublished events, sanitized; raw is the type as
// stored, the filter's argument.
type typeVM struct {
	name, raw                        string
	ready, scheduled, leased, failed int64
	// oldest is the oldest pending event's age when the snapshot was taken
	// (pending: whether there is one).
	oldest  time.Duration
	pending bool
}

// overviewKey: in the Overview the cursor moves over the lines enter can open —
// blocked aggregates, error groups, event types, as many as are drawn; / asks for
// any aggregate (agg:TYPE/ID) and t shows the next pane.
func (m *Model) overviewKey(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	if key.Matches(msg, k.Breakdowns) {
		m.pane = (m.pane + 1) % paneCount
		m.overviewSel = overviewTarget{}
		return nil
	}
	m.viewOverview(m.bodySize()) // lays out the sections: which targets show
	shown := m.overviewShown
	cur := 0
	for i, t := range shown {
		if t == m.overviewSel {
			cur = i
		}
	}
	switch {
	case key.Matches(msg, k.Up):
		cur--
	case key.Matches(msg, k.Down):
		cur++
	case key.Matches(msg, k.Top):
		cur = 0
	case key.Matches(msg, k.Bottom):
		cur = len(shown) - 1
	case key.Matches(msg, k.PageUp):
		cur -= 5
	case key.Matches(msg, k.PageDown):
		cur += 5
	case key.Matches(msg, k.Detail), key.Matches(msg, k.Aggregate):
		if cur < len(shown) {
			return m.openTarget(shown[cur], key.Matches(msg, k.Aggregate))
		}
		m.setStatus("nothing to open here: / opens any aggregate (agg:TYPE/ID)", false)
	case key.Matches(msg, k.Filter):
		m.mode = modeFilter
		m.filterInput = []rune("agg:")
	}
	if len(shown) > 0 {
		m.overviewSel = shown[min(max(cur, 0), len(shown)-1)]
	}
	return nil
}

// openTarget opens what an Overview line stands for. aggregateOnly: A, which
// opens aggregates only.
func (m *Model) openTarget(t overviewTarget, aggregateOnly bool) tea.Cmd {
	vm := m.overview
	switch {
	case t.kind == targetBlocked && t.i < len(vm.blocked):
		b := vm.blocked[t.i].blocker
		return m.openAggregate(b.rawType, b.rawID)
	case aggregateOnly:
		m.setStatus("A opens a blocked aggregate; enter opens this line's events", false)
		return nil
	case t.kind == targetError && t.i < len(vm.failedByError):
		raw := vm.errorKeys[t.i]
		if raw == "" {
			return m.jumpToList(viewFailed, query{}, "Failed: the events without an error text are among these")
		}
		return m.jumpToList(viewFailed, query{text: "err:" + quoteTerm(raw), filter: inspect.Filter{ErrorContains: raw}},
			"Failed events with this error · esc clears the filter")
	case t.kind == targetType && t.i < len(vm.types):
		ty := vm.types[t.i]
		// Where this type's trouble is: its failed events first, else its backlog.
		v := viewPending
		switch {
		case ty.failed > 0:
			v = viewFailed
		case ty.ready+ty.scheduled == 0 && ty.leased > 0:
			v = viewLeased
		}
		return m.jumpToList(v, query{text: "type:" + quoteTerm(ty.raw), filter: inspect.Filter{EventType: ty.raw}},
			listViews[v].title+" events of type "+ty.name+" · esc clears the filter")
	}
	return nil
}

// jumpToList shows list view v filtered by q, from its first row.
func (m *Model) jumpToList(v viewID, q query, status string) tea.Cmd {
	m.filters[v] = q
	t := m.tables[v]
	t.cursor, t.offset = 0, 0
	t.rows, t.loaded, t.want = nil, false, 0
	t.clearMarks()
	cmd := m.switchView(v)
	m.setStatus(status, false)
	return cmd
}

// quoteTerm is a filter term's value as typed: as it is when the filter line can
// show it so, else in Go quotes with everything but printable ASCII escaped, so
// parseQuery reads back exactly the stored text and the line shows no control
// character.
func quoteTerm(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"\\") && termtext.Sanitize(s) == s {
		return s
	}
	return strconv.QuoteToASCII(s)
}

// breakdownLines are the per-event-type and attempts breakdowns of the unpublished
// events (status --json's by_event_type and attempts_histogram): the types as a
// section, the attempts histogram as one line under a blank one.
func (m *Model) breakdownLines(w int, on func(overviewTarget) bool) (section, []string) {
	vm, st := m.overview, m.styles
	of := ""
	if vm.partial {
		of = " (of the rows read)"
	}
	var types []string
	since := vm.since(m.now())
	for i, t := range vm.types {
		oldest := "-"
		if t.pending {
			oldest = age(t.oldest + since)
		}
		s := fmt.Sprintf("%s %6d %6d %6d %6d %7s", fit(t.name, 24, false), t.ready, t.scheduled, t.leased, t.failed, oldest)
		types = append(types, cursorLine(s, on(overviewTarget{targetType, i}), w, st))
	}
	if len(types) == 0 {
		types = []string{st.dim.Render("  none unpublished")}
	}
	var buckets []string
	for _, b := range vm.attempts {
		buckets = append(buckets, b.Label+": "+itoa64(b.Count))
	}
	title := fmt.Sprintf("%-26s %6s %6s %6s %6s %7s", "BY EVENT TYPE"+of, "ready", "sched", "leased", "failed", "oldest")
	attempts := st.section.Render("ATTEMPTS"+of) + "  " + strings.Join(buckets, " · ")
	return section{title: title, body: types}, []string{"", attempts}
}

// cursorLine draws an Overview target's line, with the cursor when it is on it.
func cursorLine(s string, on bool, w int, st styles) string {
	if on {
		return st.cursor.Render(fit("> "+s, w, false))
	}
	return "  " + s
}
