package console

import (
	tea "charm.land/bubbletea/v2"
	"github.com/outboxtop/outboxtop/internal/termtext"
)

// filterKey edits the filter line: printable text is typed, backspace deletes,
// enter applies, esc cancels.
func (m *Model) filterKey(msg tea.KeyPressMsg) tea.Cmd {
	switch s := msg.String(); {
	case m.audit.filtering && (s == "esc" || s == "enter"):
		return m.auditFilterDone(s == "enter")
	}
	switch msg.String() {
	case "esc":
		m.mode = modeNormal
		return nil
	case "enter":
		m.mode = modeNormal
		if m.view == viewOverview {
			typ, id, ok := aggregateOf(string(m.filterInput))
			if !ok {
				m.setStatus("in the Overview, / opens an aggregate: agg:TYPE/ID", true)
				return nil
			}
			return m.openAggregate(typ, id)
		}
		q, err := parseQuery(string(m.filterInput))
		if err != nil {
			m.setStatus("filter: "+err.Error(), true)
			return nil
		}
		m.filters[m.view] = q
		if t := m.tables[m.view]; t != nil {
			t.cursor, t.offset = 0, 0
			t.rows, t.loaded, t.want = nil, false, 0
		}
		m.setStatus("", false)
		return m.startLoad()
	case "backspace":
		if n := len(m.filterInput); n > 0 {
			m.filterInput = m.filterInput[:n-1]
		}
		return nil
	case "ctrl+u":
		m.filterInput = nil
		return nil
	}
	if t := msg.Key().Text; t != "" && len(m.filterInput) < 200 {
		m.filterInput = append(m.filterInput, []rune(termtext.Sanitize(t))...)
	}
	return nil
}
