package console

import (
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// windowTitle is constant: event data never goes into the title.
const windowTitle = "outboxtop"

// View renders the console. It draws nothing event-derived that has not been
// sanitized, and no mouse mode is requested.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = windowTitle
	return v
}

// Render is the screen's content as a string (View's Content).
func (m *Model) Render() string {
	switch {
	case m.width == 0 || m.height == 0:
		return "" // no size yet
	case m.tooSmall():
		return fmt.Sprintf("outboxtop needs %d×%d\n(this terminal is %d×%d)", MinWidth, MinHeight, m.width, m.height)
	}
	w, h := m.bodySize()
	lines := []string{m.headerLine(), m.tabsLine()}
	if b := m.bannerText(); b != "" {
		lines = append(lines, m.styles.paused.Render(fit(b, m.width, false)))
	}
	var body string
	switch {
	case m.mode == modeHelp:
		body = m.helpScreen(w, h)
	case m.mode == modeEdit:
		body = m.fieldView(w)
	case m.mode == modeDetail || (m.mode == modeConfirm && m.detail.id != ""):
		body = m.detail.view(m.styles, w)
	case m.mode == modeAudit || (m.mode == modeFilter && m.audit.filtering):
		body = m.audit.view(m.styles, w)
	case m.mode == modeAggregate || (m.mode == modeConfirm && m.aggregate.table != nil):
		body = m.aggregate.view(m.styles, w, m.now())
	case m.view == viewOverview:
		body = m.viewOverview(w, h)
	case m.view == viewInbox:
		body = m.viewInbox(w, h)
	default:
		body = m.listInfo(w) + "\n" + m.tables[m.view].View(m.now(), m.styles)
	}
	bl := strings.Split(body, "\n")
	for len(bl) < h {
		bl = append(bl, "")
	}
	lines = append(lines, bl[:h]...)
	if row := m.bulkRow(); row != "" {
		lines = append(lines, m.styles.prompt.Render(row))
	}
	lines = append(lines, m.statusLine(), m.footer())
	return strings.Join(lines, "\n")
}

// bannerText is the line no operator can miss: a paused relay, an unreachable
// broker, a database that does not answer.
func (m *Model) bannerText() string {
	var parts []string
	if r := m.overview.relay; r != nil && r.Paused {
		parts = append(parts, "RELAY PAUSED: nothing is being published (p resumes)")
	}
	if r := m.overview.relay; r != nil && !r.BrokerReachable && !r.Paused {
		parts = append(parts, "KAFKA UNREACHABLE: the relay is backing off")
	}
	if t := m.missingTopics(); len(t) > 0 {
		s := "TOPIC " + t[0].Topic + " DOES NOT EXIST: " + itoa(t[0].Events) + " events wait for it"
		if len(t) > 1 {
			s += " (+" + itoa(len(t)-1) + " more topics)"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " · ")
}

func (m *Model) headerLine() string {
	st := m.styles
	left := st.title.Render("outboxtop")
	if m.opts.Name != "" {
		left += " · " + st.title.Render(termtext.Sanitize(m.opts.Name)) + " (esc: fleet)"
	}
	left += " · schema " + m.opts.Inspector.Schema()
	switch r := m.overview.relay; {
	case m.opts.Relay == nil:
		left += " · relay off"
	case r != nil && r.Paused:
		left += " · relay " + st.paused.Render("PAUSED")
	default:
		left += " · relay on"
	}
	if m.opts.ReadOnly {
		left += " · " + st.warn.Render("READ-ONLY")
	}
	right := "refresh " + m.refresh.String()
	if every := m.refreshEvery(); every > m.refresh {
		right = fmt.Sprintf("slow read %s: every %s", m.loadTook.Round(10*time.Millisecond), every.Round(100*time.Millisecond))
	}
	now := m.now()
	switch {
	case !m.loaded && m.loadErr == nil:
		right = "loading… · " + right
	case m.loadErr != nil || m.stale():
		right = st.warn.Render(" stale "+age(now.Sub(m.lastLoaded))+" ") + " · " + right
	}
	pad := m.width - ansi.StringWidth(left) - ansi.StringWidth(right)
	if pad < 1 {
		return ansi.Truncate(left+" "+right, m.width, "…")
	}
	return left + strings.Repeat(" ", pad) + right
}

// stale: a load has run for longer than two refresh intervals (2 s at least).
func (m *Model) stale() bool {
	return m.loading && m.now().Sub(m.loadStarted) > max(2*m.refresh, 2*time.Second)
}

func (m *Model) tabsLine() string {
	c := m.overview.counts
	counts := [viewCount]inspect.Count{{}, {Value: c.Pending, Bound: c.Bounds.Pending}, {Value: c.Leased, Bound: c.Bounds.Leased},
		{Value: c.Failed, Bound: c.Bounds.Failed}, c.Published, {Value: m.consumersTabCount()}}
	titles := viewTitles
	if m.view == viewArchived {
		titles[viewPublished], counts[viewPublished] = listViews[viewArchived].title, c.Archived
	}
	if listViews[m.view] != nil && m.filters[m.view].text == "" {
		counts[m.view.tab()] = m.listTotal(m.view) // the open tab says what its unfiltered list's title says
	}
	// Narrower steps until the line fits: one space between tabs, then compact
	// counts (993k), then short titles on the tabs not open. Every tab stays on
	// screen rather than the line being cut.
	line := func(step int) string {
		var parts []string
		for i, title := range titles {
			if step >= 3 && viewID(i) != m.view.tab() && viewShortTitles[i] != "" {
				title = viewShortTitles[i]
			}
			s := fmt.Sprintf("%d %s", i+1, title)
			if i > 0 && m.loaded {
				if step >= 2 {
					s += " " + compact(counts[i])
				} else {
					s += " " + counts[i].String()
				}
			}
			pad := " "
			if step >= 1 {
				pad = "" // one space between tabs instead of two
			}
			if viewID(i) == m.view.tab() {
				parts = append(parts, m.styles.tabOn.Render(" "+s+pad))
			} else {
				parts = append(parts, m.styles.tabOff.Render(" "+s+pad))
			}
		}
		return strings.Join(parts, "")
	}
	l := line(0)
	for step := 1; step <= 3 && ansi.StringWidth(l) > m.width; step++ {
		l = line(step)
	}
	return ansi.Truncate(l, m.width, "…")
}

// compact is a count in at most five cells: 9999, 12k, 993k, 1M, 1.2M, marked as
// Count.Mark says. A lower bound is rounded down, so it stays one.
func compact(c inspect.Count) string {
	n := c.Value
	if c.Bound == inspect.LowerBound && n >= 10_000 {
		n = n / 1000 * 1000
		if n >= 1_000_000 {
			n = n / 100_000 * 100_000
		}
	}
	var s string
	switch {
	case n < 10_000:
		s = fmt.Sprint(n)
	case n < 1_000_000:
		s = fmt.Sprintf("%dk", (n+500)/1000)
	default:
		s = strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
	}
	return c.Mark() + s
}

// listInfo is the line above a table: what is listed, how, and what is marked.
func (m *Model) listInfo(w int) string {
	lv, t, total := listViews[m.view], m.tables[m.view], m.listTotal(m.view)
	dir := "asc"
	if t.desc {
		dir = "desc"
	}
	// Marks first: at 80 columns the end of the line is what gets cut.
	s := strings.ToUpper(lv.title)
	s += m.markedInfo(t)
	switch {
	case !t.loaded && m.loadErr != nil:
		s += " · not loaded: the database does not answer"
	case !t.loaded:
		s += " · loading…"
	case t.scan != nil && t.scan.Stopped:
		s += " · " + m.searchedText(len(t.rows), t.scan)
	case t.more || total.Mark() != "" || total.Value != int64(len(t.rows)):
		s += fmt.Sprintf(" · %d of %s", len(t.rows), total)
	default:
		s += fmt.Sprintf(" · %d listed", len(t.rows))
	}
	if t.loaded && (m.loadErr != nil || m.stale()) {
		s += " · stale " + age(m.now().Sub(m.lastLoaded))
	}
	if q := m.filters[m.view]; q.text != "" {
		s += " · filter " + q.text
	}
	s += fmt.Sprintf(" · sort %s %s", t.sort, dir)
	if m.view == viewLeased && m.overview.expiredLeases > 0 {
		s += fmt.Sprintf(" · %d expired leases (in Pending)", m.overview.expiredLeases)
	}
	return m.styles.section.Render(ansi.Truncate(s, w, "…"))
}

func (m *Model) statusLine() string {
	st := m.styles
	switch {
	case m.mode == modeConfirm && m.confirm != nil:
		head, tail := m.confirm.promptParts()
		s := " " + head
		if w := ansi.StringWidth(s); w > m.width {
			s = "…" + ansi.TruncateLeft(s, w-m.width+1, "") // what is typed stays in view
		} else {
			s += tail
		}
		return st.prompt.Render(fit(s, m.width, false))
	case m.mode == modeFilter:
		// What is typed stays in view: a long filter scrolls, its end shown.
		in := string(m.filterInput)
		if m.audit.filtering {
			return fit("audit filter: "+in+"█ "+m.styles.dim.Render("actor:NAME action:A newer:1h older:1h"), m.width, false)
		}
		if m.view == viewOverview {
			return fit("aggregate: "+in+"█ "+m.styles.dim.Render("agg:TYPE/ID"), m.width, false)
		}
		if in == "" {
			return fit("filter: "+m.styles.dim.Render("type:T agg:ID aggtype:T id:HEX err:T payload:P=V header:K=V words")+"█", m.width, false)
		}
		room := m.width - len("filter: ") - 1
		if w := ansi.StringWidth(in); w > room {
			in = "…" + ansi.TruncateLeft(in, w-room+1, "")
		}
		return fit("filter: "+in+"█", m.width, false)
	case m.loadErr != nil:
		return st.bad.Render(fit(dbErrorText(m.loadErr), m.width, false))
	case m.status != "" && m.statusOn == m.screen():
		if m.statusBad {
			return st.bad.Render(fit(m.status, m.width, false))
		}
		return fit(m.status, m.width, false)
	}
	return ""
}

// dbErrorText is a load error on one line with its cause first: driver errors
// wrap the cause last and across lines ("failed to connect to …:\n\t…: connection
// refused"), which a status line would cut before reaching it.
func dbErrorText(err error) string {
	s := termtext.Sanitize(strings.Join(strings.Fields(err.Error()), " "))
	if i := strings.LastIndex(s, ": "); i > 0 && i+2 < len(s) {
		s = s[i+2:] + " ← " + s[:i]
	}
	return "database: " + s
}

// footer is the short help for what can be done here.
func (m *Model) footer() string {
	k := m.keys
	var b []key.Binding
	switch m.mode {
	// Bindings shown only as help still need a key: help leaves out a binding
	// without one (it counts as disabled).
	case modeHelp:
		b = []key.Binding{helpOnly("any key", "close help")}
	case modeConfirm:
		b = m.confirmFooter()
	case modeFilter:
		b = []key.Binding{helpOnly("enter", "apply"), helpOnly("esc", "cancel"), helpOnly("backspace", "delete")}
	case modeEdit:
		b = []key.Binding{helpOnly("ctrl+s", "review the diff"), helpOnly("esc", "cancel"), helpOnly("arrows", "move")}
	case modeDetail:
		acts := m.viewActions()
		if m.detailFrom == modeAggregate {
			acts = m.aggregateActions()
		}
		b = append([]key.Binding{k.Back, k.Down, k.PageDown}, acts...)
		b = append(b, k.Help, k.Quit)
	case modeAudit:
		b = []key.Binding{helpOnly("esc", "back"), helpOnly("/", "filter"), k.Down, k.PageDown, k.Help, k.Quit}
	case modeAggregate:
		b = append([]key.Binding{helpOnly("esc", "back"), helpOnly("enter", "event detail")}, m.aggregateActions()...)
		b = append(b, k.Help, k.Quit)
	default:
		if m.view.tab() == viewPublished {
			other := "archived"
			if m.view == viewArchived {
				other = "published"
			}
			b = append(m.viewActions(), helpOnly("v", other), k.Detail, k.Filter, k.Mark, k.Help, k.MarkAll, k.Quit)
		} else if listViews[m.view] != nil {
			b = append(m.viewActions(), k.Detail, k.Filter, k.Mark, k.Help, k.MarkAll, k.Quit)
		} else if m.view == viewOverview {
			b = []key.Binding{helpOnly("tab/1-6", "views"), helpOnly("enter", "open"), helpOnly("t", m.pane.next()), k.Help, k.Quit}
			if k.Pause.Enabled() && m.opts.Relay != nil {
				what := "pause"
				if r := m.overview.relay; r != nil && r.Paused {
					what = "resume"
				}
				b = append(b, helpOnly("p", what))
			}
		} else {
			b = []key.Binding{k.NextView, k.JumpView, k.Pause, k.Help, k.Quit}
		}
	}
	return ansi.Truncate(m.help.ShortHelpView(b), m.width, "…")
}

// confirmFooter says what the prompt line asks at its stage.
func (m *Model) confirmFooter() []key.Binding {
	p := m.confirm
	switch {
	case p == nil:
		return nil
	case p.stage() == stageReason:
		return []key.Binding{helpOnly("type", "the reason (audited)"), helpOnly("enter", "then yes to confirm"), helpOnly("esc", "cancel")}
	case p.stage() == stageCount:
		return []key.Binding{helpOnly("type "+p.answers()[0]+", enter", "the count, then yes"), helpOnly("any other key", "cancel")}
	case p.action == inspect.Replay:
		return []key.Binding{helpOnly("yes", "same ids (inboxes skip)"), helpOnly("new", "new ids"), helpOnly("+ enter", "run"), helpOnly("other", "cancel")}
	}
	return []key.Binding{helpOnly("type yes, enter", "run"), helpOnly("any other key", "cancel")}
}

// pair is two bindings on one help line ("g G  top, bottom"); a disabled one
// (an action in read-only mode) is left out.
func pair(a, b key.Binding) key.Binding {
	switch {
	case !b.Enabled():
		return a
	case !a.Enabled():
		return b
	}
	return key.NewBinding(key.WithKeys(a.Keys()...), key.WithHelp(a.Help().Key+" "+b.Help().Key, a.Help().Desc+", "+b.Help().Desc))
}

func helpOnly(k, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(k), key.WithHelp(k, desc))
}

// viewActions are the enabled action keys that apply to the current view.
func (m *Model) viewActions() []key.Binding {
	lv := listViews[m.view]
	if lv == nil {
		return nil
	}
	k := m.keys
	byAction := map[string]key.Binding{"retry": k.Retry, "reset-lease": k.ResetLease, "archive": k.Archive, "park": k.Park, "skip": k.Skip, "replay": k.Replay}
	var out []key.Binding
	for _, a := range lv.actions {
		if b := byAction[string(a)]; b.Enabled() {
			out = append(out, b)
		}
	}
	return out
}

// helpScreen lists every key, grouped; disabled keys (actions in read-only mode)
// are left out, extras appear only when there are some.
func (m *Model) helpScreen(w, h int) string {
	k := m.keys
	// Each action says what it asks besides the yes every one asks for.
	asks := func(b key.Binding, desc string) key.Binding {
		b.SetHelp(b.Help().Key, desc)
		return b
	}
	groups := []struct {
		title string
		keys  []key.Binding
		notes []string
	}{
		{"VIEWS", []key.Binding{k.NextView, k.PrevView, k.JumpView, k.Archived, k.Breakdowns}, nil},
		// Pairs on one line each: 80×24 holds every key.
		{"MOVE", []key.Binding{pair(k.Up, k.Down), pair(k.Top, k.Bottom), pair(k.PageUp, k.PageDown), pair(k.Sort, k.Reverse)}, nil},
		{"CONSOLE", []key.Binding{k.AuditLog, k.Faster, k.Slower, k.Help, k.Quit}, nil},
		{"EVENTS", []key.Binding{k.Detail, k.Back, k.Filter, pair(k.Mark, k.MarkAll), k.Aggregate}, nil},
		{"ACTIONS: each asks yes + enter", []key.Binding{pair(k.Retry, k.ResetLease), asks(pair(k.Park, k.Skip), "park, skip (reason first)"),
			asks(pair(k.Archive, k.Replay), "archive, replay (yes/new)"), k.Pause, k.Terminate, asks(k.Correct, "correct ($EDITOR, reason)")},
			[]string{"  * * (all matching): the count first", "  any other key cancels"}},
	}
	var extras []key.Binding
	for _, e := range m.opts.Extras {
		extras = append(extras, e.Key)
	}
	groups = append(groups, struct {
		title string
		keys  []key.Binding
		notes []string
	}{"EXTRAS", extras, nil})
	var blocks [][]string
	for _, g := range groups {
		var lines []string
		for _, b := range g.keys {
			if b.Enabled() && b.Help().Key != "" {
				lines = append(lines, "  "+fit(b.Help().Key, 10, false)+" "+b.Help().Desc)
			}
		}
		if len(lines) == 0 {
			continue
		}
		for _, n := range g.notes {
			lines = append(lines, m.styles.dim.Render(n))
		}
		blocks = append(blocks, append([]string{m.styles.section.Render(g.title)}, lines...))
	}
	if m.opts.ReadOnly {
		blocks = append(blocks, []string{m.styles.warn.Render("READ-ONLY: actions are refused")})
	}
	// Two columns: views, moving and the console's own keys on the left; events,
	// actions and extras on the right.
	var left, right []string
	for i, b := range blocks {
		col := &right
		if i < 3 {
			col = &left
		}
		if len(*col) > 0 {
			*col = append(*col, "")
		}
		*col = append(*col, b...)
	}
	if len(right)+4 <= h { // the hints go first when keys need the room
		right = append(right, "", m.styles.dim.Render("filter: type:T agg:ID aggtype:T id:HEX"),
			m.styles.dim.Render("err:TEXT payload:PATH=V header:K=V"),
			m.styles.dim.Render("words · Overview: enter jumps"))
	}
	return clip(joinColumns(left, right, w/2, w-w/2), w, h)
}
