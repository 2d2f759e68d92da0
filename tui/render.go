package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
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
	case m.width < MinWidth || m.height < MinHeight:
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
	case m.mode == modeDetail || (m.mode == modeConfirm && m.detail.id != ""):
		body = m.detail.view(m.styles, w)
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
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " · ")
}

func (m *Model) headerLine() string {
	st := m.styles
	left := st.title.Render("outboxtop") + " · schema " + m.opts.Inspector.Schema()
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
	now := m.now()
	switch {
	case !m.loaded && m.loadErr == nil:
		right = "loading… · " + right
	case m.loadErr != nil || (m.loading && now.Sub(m.loadStarted) > max(2*m.refresh, 2*1e9)):
		right = st.warn.Render(" stale "+age(now.Sub(m.lastLoaded))+" ") + " · " + right
	}
	pad := m.width - ansi.StringWidth(left) - ansi.StringWidth(right)
	if pad < 1 {
		return ansi.Truncate(left+" "+right, m.width, "…")
	}
	return left + strings.Repeat(" ", pad) + right
}

func (m *Model) tabsLine() string {
	c := m.overview.counts
	counts := [viewCount]string{"", fmt.Sprint(c.Pending), fmt.Sprint(c.Leased), fmt.Sprint(c.Failed), c.Published.String(), fmt.Sprint(len(m.overview.inbox))}
	var parts []string
	for i, title := range viewTitles {
		s := fmt.Sprintf("%d %s", i+1, title)
		if counts[i] != "" && m.loaded {
			s += " " + counts[i]
		}
		if viewID(i) == m.view {
			parts = append(parts, m.styles.tabOn.Render(" "+s+" "))
		} else {
			parts = append(parts, m.styles.tabOff.Render(" "+s+" "))
		}
	}
	return ansi.Truncate(strings.Join(parts, ""), m.width, "…")
}

// listInfo is the line above a table: what is listed, how, and what is marked.
func (m *Model) listInfo(w int) string {
	lv, t := listViews[m.view], m.tables[m.view]
	dir := "asc"
	if t.desc {
		dir = "desc"
	}
	s := fmt.Sprintf("%s · %d listed", strings.ToUpper(lv.title), len(t.rows))
	if t.more {
		s += fmt.Sprintf(" (first %d)", m.opts.Limit)
	}
	s += fmt.Sprintf(" · sort %s %s", t.sort, dir)
	if q := m.filters[m.view]; q.text != "" {
		s += " · filter " + q.text
	}
	if n := len(t.markOrder); n > 0 {
		s += fmt.Sprintf(" · %d marked", n)
	}
	if m.view == viewLeased && m.overview.expiredLeases > 0 {
		s += fmt.Sprintf(" · %d expired leases (in Pending)", m.overview.expiredLeases)
	}
	return m.styles.section.Render(ansi.Truncate(s, w, "…"))
}

func (m *Model) statusLine() string {
	st := m.styles
	switch {
	case m.mode == modeConfirm && m.confirm != nil:
		return st.prompt.Render(fit(" "+m.confirm.prompt(), m.width, false))
	case m.mode == modeFilter:
		return fit("filter (type: agg: aggtype: id: err: or words; enter applies, esc cancels): "+string(m.filterInput)+"█", m.width, false)
	case m.loadErr != nil:
		return st.bad.Render(fit("database: "+Sanitize(m.loadErr.Error()), m.width, false))
	case m.status != "":
		if m.statusBad {
			return st.bad.Render(fit(m.status, m.width, false))
		}
		return fit(m.status, m.width, false)
	}
	return ""
}

// footer is the short help for what can be done here.
func (m *Model) footer() string {
	k := m.keys
	var b []key.Binding
	switch m.mode {
	case modeHelp:
		b = []key.Binding{key.NewBinding(key.WithHelp("any key", "close help"))}
	case modeConfirm:
		b = []key.Binding{key.NewBinding(key.WithHelp("y", "confirm")), key.NewBinding(key.WithHelp("other", "cancel"))}
	case modeFilter:
		b = []key.Binding{key.NewBinding(key.WithHelp("enter", "apply")), key.NewBinding(key.WithHelp("esc", "cancel"))}
	case modeDetail:
		b = append([]key.Binding{k.Back, k.Down, k.PageDown}, m.viewActions()...)
		b = append(b, k.Help, k.Quit)
	default:
		if listViews[m.view] != nil {
			b = append(m.viewActions(), k.Detail, k.Filter, k.Mark, k.Help, k.MarkAll, k.Quit)
		} else {
			b = []key.Binding{k.NextView, k.JumpView, k.Pause, k.Help, k.Quit}
		}
	}
	return ansi.Truncate(m.help.ShortHelpView(b), m.width, "…")
}

// viewActions are the enabled action keys that apply to the current view.
func (m *Model) viewActions() []key.Binding {
	lv := listViews[m.view]
	if lv == nil {
		return nil
	}
	k := m.keys
	byAction := map[string]key.Binding{"retry": k.Retry, "reset-lease": k.ResetLease, "archive": k.Archive, "park": k.Park, "skip": k.Skip}
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
	groups := []struct {
		title string
		keys  []key.Binding
	}{
		{"VIEWS", []key.Binding{k.NextView, k.PrevView, k.JumpView}},
		{"MOVE", []key.Binding{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown, k.Sort, k.Reverse}},
		{"CONSOLE", []key.Binding{k.Faster, k.Slower, k.Help, k.Quit}},
		{"EVENTS", []key.Binding{k.Detail, k.Back, k.Filter, k.Mark, k.MarkAll}},
		{"ACTIONS (each asks y/N first)", []key.Binding{k.Retry, k.ResetLease, k.Park, k.Skip, k.Archive, k.Pause}},
	}
	var extras []key.Binding
	for _, e := range m.opts.Extras {
		extras = append(extras, e.Key)
	}
	groups = append(groups, struct {
		title string
		keys  []key.Binding
	}{"EXTRAS", extras})
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
	right = append(right, "", m.styles.dim.Render("filter terms: type:T agg:ID aggtype:T"), m.styles.dim.Render("id:PREFIX err:TEXT, or plain words"))
	return clip(joinColumns(left, right, w/2, w-w/2), w, h)
}
