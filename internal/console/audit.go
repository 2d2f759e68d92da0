package console

import (
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// auditModel is the audit log: the operators' actions newest first, filtered by
// actor, action and age, read again with every refresh while it is open.
type auditModel struct {
	open      bool
	filtering bool // the filter line edits this log's filter
	text      string
	filter    inspect.AuditFilter
	loading   bool
	loaded    bool
	err       string
	rows      int
	vp        viewport.Model
}

type auditMsg struct {
	text string // the filter the rows are for
	recs []inspect.AuditRecord
	err  error
}

// auditShown bounds the rows the view reads: a page by the primary key.
const auditShown = 200

func (m *Model) openAudit() tea.Cmd {
	a := &m.audit
	if !a.open {
		a.vp = viewport.New()
		a.open = true
		m.layout()
	}
	m.mode = modeAudit
	return m.loadAudit()
}

// refreshAudit reads the open audit log again (nil when it is not on screen).
func (m *Model) refreshAudit() tea.Cmd {
	if m.mode != modeAudit {
		return nil
	}
	return m.loadAudit()
}

func (m *Model) loadAudit() tea.Cmd {
	a := &m.audit
	if a.loading || !a.open {
		return nil
	}
	a.loading = true
	in, ctx, f, text := m.opts.Inspector, m.opts.Context, a.filter, a.text
	f.Limit = auditShown
	return func() tea.Msg {
		recs, err := in.AuditLog(ctx, f)
		return auditMsg{text: text, recs: recs, err: err}
	}
}

// parseAuditQuery reads "actor:NAME action:A newer:DUR older:DUR"; bare words
// are actors.
func parseAuditQuery(s string) (inspect.AuditFilter, error) {
	var f inspect.AuditFilter
	var actor []string
	for _, w := range strings.Fields(s) {
		k, v, ok := strings.Cut(w, ":")
		if !ok || v == "" {
			actor = append(actor, w)
			continue
		}
		var err error
		switch strings.ToLower(k) {
		case "actor":
			actor = append(actor, v)
		case "action":
			f.Action = strings.ToLower(v)
		case "newer":
			f.NewerThan, err = time.ParseDuration(v)
		case "older":
			f.OlderThan, err = time.ParseDuration(v)
		default:
			actor = append(actor, w)
		}
		if err != nil {
			return f, fmt.Errorf("%s: %v", k, err)
		}
	}
	f.Actor = strings.Join(actor, " ")
	return f, f.Validate()
}

func (a *auditModel) set(msg auditMsg, now time.Time) {
	a.loading = false
	if !a.open || msg.text != a.text {
		return // the log was closed, or its filter changed, while this was read
	}
	if msg.err != nil {
		a.err = "could not read the audit log: " + termtext.Sanitize(msg.err.Error())
		return
	}
	a.err, a.loaded, a.rows = "", true, len(msg.recs)
	var b strings.Builder
	for _, r := range msg.recs {
		events := ""
		if len(r.EventIDs) > 0 {
			events = shortID(termtext.Sanitize(r.EventIDs[0]))
			if n := len(r.EventIDs) - 1; n > 0 {
				events += fmt.Sprintf(" +%d", n)
			}
		}
		fmt.Fprintf(&b, "#%-5d %6s %-11s %s %4d %-11s %s\n", r.ID, inspect.Ago(r.At, now), termtext.Sanitize(r.Action),
			fit(termtext.Sanitize(r.Actor), 16, false), r.Rows, events, termtext.Sanitize(r.Reason))
	}
	if len(msg.recs) == 0 {
		b.WriteString("  no operator action matches\n")
	}
	y := a.vp.YOffset()
	a.vp.SetContent(strings.TrimRight(b.String(), "\n"))
	a.vp.SetYOffset(y)
}

func (a *auditModel) setSize(w, h int) {
	a.vp.SetWidth(w)
	a.vp.SetHeight(max(h-2, 1))
}

func (a *auditModel) key(m *Model, msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	switch {
	case key.Matches(msg, k.Back):
		if a.text != "" {
			a.text, a.filter = "", inspect.AuditFilter{}
			return m.loadAudit()
		}
		m.mode, a.open = modeNormal, false
	case key.Matches(msg, k.Filter):
		m.mode, a.filtering = modeFilter, true
		m.filterInput = []rune(a.text)
	default:
		k.scroll(&a.vp, msg)
	}
	return nil
}

// filterDone applies (or, cancelled, drops) the audit log's filter line.
func (m *Model) auditFilterDone(apply bool) tea.Cmd {
	a := &m.audit
	m.mode, a.filtering = modeAudit, false
	if !apply {
		return nil
	}
	f, err := parseAuditQuery(string(m.filterInput))
	if err != nil {
		m.setStatus("audit filter: "+termtext.Sanitize(err.Error()), true)
		return nil
	}
	a.text, a.filter = strings.TrimSpace(string(m.filterInput)), f
	a.vp.GotoTop()
	m.setStatus("", false)
	return m.loadAudit()
}

func (a *auditModel) view(st styles, w int) string {
	title := "AUDIT LOG · newest first"
	switch {
	case !a.loaded:
		title += " · loading…"
	case a.rows == auditShown:
		title += fmt.Sprintf(" · the newest %d", a.rows)
	default:
		title += fmt.Sprintf(" · %d", a.rows)
	}
	if a.text != "" {
		title += " · filter " + a.text
	}
	head := st.header.Render(fit(fmt.Sprintf("%-6s %6s %-11s %-16s %4s %-11s %s", "AUDIT", "AGO", "ACTION", "ACTOR", "ROWS", "EVENTS", "REASON"), w, false))
	if a.err != "" {
		return st.section.Render(fit(title, w, false)) + "\n" + st.bad.Render(fit(a.err, w, false))
	}
	return st.section.Render(fit(title, w, false)) + "\n" + head + "\n" + a.vp.View()
}
