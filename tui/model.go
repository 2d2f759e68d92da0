// Package tui is outboxtop's console: a Bubble Tea program that shows what is
// pending, leased, failed and published, and lets an operator retry, reset leases,
// park, skip and archive events through inspect's audited actions.
//
// One root Model owns the window size, the mode (normal, filter, confirm, help,
// detail) and read-only enforcement. Loads and actions are tea.Cmds that return
// typed messages; nothing in Update does I/O. Text from the database enters the
// view model through Sanitize, once.
package tui

import (
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

type mode int

const (
	modeNormal mode = iota
	modeFilter
	modeConfirm
	modeHelp
	modeDetail
)

// MinWidth and MinHeight are the smallest terminal the console draws in.
const (
	MinWidth  = 80
	MinHeight = 24
)

// Model is the console's root model.
type Model struct {
	opts    Options
	keys    KeyMap // what is offered (actions disabled in read-only mode)
	allKeys KeyMap // what is recognized, to refuse actions by name
	styles  styles
	help    help.Model

	width, height int
	view          viewID
	mode          mode

	tables      map[viewID]*table
	filters     map[viewID]query
	filterInput []rune

	overview overviewVM
	rates    []float64

	loading, reloadWanted   bool
	loaded                  bool
	loadStarted, lastLoaded time.Time
	loadErr                 error
	refresh                 time.Duration
	tickGen                 int

	status    string
	statusBad bool
	confirm   *pendingAction
	detail    detailModel
}

// New returns the console's model. Run it with Run, or drive Update directly.
func New(opts Options) *Model {
	opts.defaults()
	m := &Model{
		opts:    opts,
		keys:    DefaultKeyMap(),
		allKeys: DefaultKeyMap(),
		styles:  newStyles(),
		help:    help.New(),
		tables:  map[viewID]*table{},
		filters: map[viewID]query{},
		refresh: opts.Refresh,
	}
	if opts.ReadOnly {
		m.keys = m.keys.readOnly()
	}
	for id, lv := range listViews {
		t := newTable(lv.columns)
		t.sort, t.desc = lv.sorts[0], lv.desc
		m.tables[id] = t
	}
	return m
}

func (m *Model) now() time.Time { return m.opts.Now() }

// Init starts the first load and the clock.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.startLoad(), m.tick())
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tickMsg:
		if msg.gen != m.tickGen {
			return m, nil // an older tick chain, replaced when the interval changed
		}
		cmds := []tea.Cmd{m.tick()}
		if !m.loading && m.now().Sub(m.loadStarted) >= m.refresh {
			cmds = append(cmds, m.startLoad())
		}
		return m, tea.Batch(cmds...)
	case loadedMsg:
		return m, m.onLoaded(msg)
	case detailMsg:
		m.detail.set(msg)
		return m, nil
	case actionDoneMsg:
		return m, m.actionDone(msg)
	case statusMsg:
		m.setStatus(msg.text, msg.bad)
		return m, m.startLoad()
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	return m, nil
}

func (m *Model) onLoaded(msg loadedMsg) tea.Cmd {
	m.loading = false
	if msg.err != nil {
		if m.opts.Context.Err() != nil {
			return nil
		}
		m.loadErr = msg.err
	} else {
		m.loadErr = nil
		m.loaded = true
		m.lastLoaded = m.now()
		m.overview = msg.overview
		m.rates = append(m.rates, msg.overview.published.RatePerSecond)
		if len(m.rates) > 60 {
			m.rates = m.rates[len(m.rates)-60:]
		}
		if t := m.tables[msg.req.view]; t != nil && msg.req.filter.text == m.filters[msg.req.view].text &&
			msg.req.sort == t.sort && msg.req.desc == t.desc {
			t.SetRows(msg.rows)
			t.more = msg.more
		}
	}
	if m.reloadWanted {
		return m.startLoad()
	}
	return nil
}

// layout gives the components their sizes.
func (m *Model) layout() {
	w, h := m.bodySize()
	for _, t := range m.tables {
		t.SetSize(w, h-1)
	}
	m.detail.setSize(w, h)
	m.help.SetWidth(w)
}

// bodySize is the space between the header lines and the status and footer lines.
func (m *Model) bodySize() (int, int) {
	h := m.height - 4
	if m.bannerText() != "" {
		h--
	}
	return m.width, max(h, 1)
}

func (m *Model) setStatus(s string, bad bool) { m.status, m.statusBad = s, bad }

// switchView shows view v and loads it.
func (m *Model) switchView(v viewID) tea.Cmd {
	m.view = (v + viewCount) % viewCount
	m.status = ""
	return m.startLoad()
}

func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	switch m.mode {
	case modeConfirm:
		return m.confirmKey(msg)
	case modeFilter:
		return m.filterKey(msg)
	case modeHelp:
		if key.Matches(msg, m.keys.Quit) && msg.String() == "ctrl+c" {
			return tea.Quit
		}
		m.mode = modeNormal
		return nil
	}
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.mode = modeHelp
		return nil
	case key.Matches(msg, k.Faster):
		return m.setRefresh(-1)
	case key.Matches(msg, k.Slower):
		return m.setRefresh(+1)
	case key.Matches(msg, k.Pause):
		return m.togglePause()
	}
	if cmd, ok := m.actionKey(msg); ok {
		return cmd
	}
	for _, e := range m.opts.Extras {
		if key.Matches(msg, e.Key) {
			return m.runExtra(e)
		}
	}
	if m.mode == modeDetail {
		return m.detail.key(m, msg)
	}
	switch {
	case key.Matches(msg, k.NextView):
		return m.switchView(m.view + 1)
	case key.Matches(msg, k.PrevView):
		return m.switchView(m.view - 1)
	case key.Matches(msg, k.JumpView):
		return m.switchView(viewID(msg.String()[0] - '1'))
	}
	t := m.tables[m.view]
	if t == nil {
		return nil
	}
	switch {
	case key.Matches(msg, k.Detail):
		if r, ok := t.current(); ok {
			return m.openDetail(r.id)
		}
	case key.Matches(msg, k.Back):
		if len(t.markOrder) > 0 {
			t.clearMarks()
			m.setStatus("marks cleared", false)
		} else if m.filters[m.view].text != "" {
			m.filters[m.view] = query{}
			m.setStatus("filter cleared", false)
			return m.startLoad()
		}
	case key.Matches(msg, k.Filter):
		m.mode = modeFilter
		m.filterInput = []rune(m.filters[m.view].text)
	case key.Matches(msg, k.Mark):
		t.toggleMark()
		t.cursor++
		t.clamp()
	case key.Matches(msg, k.MarkAll):
		n := t.markAll()
		m.setStatus(markedText(n, t.more), false)
	case key.Matches(msg, k.Sort):
		lv := listViews[m.view]
		for i, s := range lv.sorts {
			if s == t.sort {
				t.sort = lv.sorts[(i+1)%len(lv.sorts)]
				break
			}
		}
		return m.startLoad()
	case key.Matches(msg, k.Reverse):
		t.desc = !t.desc
		return m.startLoad()
	default:
		t.Update(msg, k)
	}
	return nil
}

func markedText(n int, more bool) string {
	s := "marked all " + itoa(n) + " listed"
	if more {
		s += " (only the loaded rows: narrow the filter to reach the rest)"
	}
	return s
}

var refreshSteps = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second}

// setRefresh moves the refresh interval one step faster (-1) or slower (+1) and
// restarts the tick chain so the new interval applies at once.
func (m *Model) setRefresh(dir int) tea.Cmd {
	i := 0
	for i < len(refreshSteps)-1 && refreshSteps[i] < m.refresh {
		i++
	}
	i = min(max(i+dir, 0), len(refreshSteps)-1)
	m.refresh = refreshSteps[i]
	m.tickGen++
	m.setStatus("refresh every "+m.refresh.String(), false)
	return m.tick()
}

// togglePause pauses or resumes the embedded relay.
func (m *Model) togglePause() tea.Cmd {
	r := m.opts.Relay
	if r == nil {
		m.setStatus("no relay is embedded in this console (--no-relay)", true)
		return nil
	}
	return func() tea.Msg {
		if r.Status().Paused {
			r.Resume()
			return statusMsg{text: "relay resumed"}
		}
		r.Pause()
		return statusMsg{text: "relay paused: nothing is published until p resumes it"}
	}
}

// statusMsg is a line for the status bar from a command, followed by a reload.
type statusMsg struct {
	text string
	bad  bool
}

func (m *Model) runExtra(e Extra) tea.Cmd {
	if e.Run == nil {
		return nil
	}
	ctx := m.opts.Context
	return func() tea.Msg {
		s, err := e.Run(ctx)
		if err != nil {
			return statusMsg{text: Sanitize(err.Error()), bad: true}
		}
		return statusMsg{text: Sanitize(s)}
	}
}

var _ tea.Model = (*Model)(nil)
