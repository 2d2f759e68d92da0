// Package console is outboxtop's console: a Bubble Tea program that shows what is
// pending, leased, failed and published, and lets an operator retry, reset leases,
// park, skip, archive and replay events through inspect's audited actions.
//
// One root Model owns the window size, the mode (normal, filter, confirm, help,
// detail) and read-only enforcement. Loads and actions are tea.Cmds that return
// typed messages; nothing in Update does I/O. Text from the database enters the
// view model through Sanitize, once.
package console

import (
	"github.com/outboxtop/outboxtop/internal/termtext"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

type mode int

const (
	modeNormal mode = iota
	modeFilter
	modeConfirm
	modeHelp
	modeDetail
	modeAggregate
	modeAudit
	modeEdit // the field editor of a correction (correct.go)
)

// MinWidth and MinHeight are the smallest terminal the console draws in.
const (
	MinWidth  = 80
	MinHeight = 24
)

// Model is the console's root model.
type Model struct {
	// field is the payload being corrected in the field editor (modeEdit).
	field *fieldEditor
	// edit, when set, stands in for the editor a correction opens (tests).
	edit    func(path string, done func(error) tea.Msg) tea.Cmd
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
	trend    trend
	// publishedFloor keeps the estimated published total from going down between
	// refreshes (the statistics it comes from move in steps); an archive resets it.
	publishedFloor int64
	// errAt and pubAtErr: the relay's last error and its published total when that
	// error was first seen, to tell a resolved error from a current one.
	errAt    time.Time
	pubAtErr uint64

	loading, reloadWanted   bool
	loaded                  bool
	loadStarted, lastLoaded time.Time
	loadErr                 error
	refresh                 time.Duration
	// loadTook is how long the last load took: refreshes start at least
	// 10 × that apart (refreshEvery).
	loadTook time.Duration
	tickGen  int

	status    string
	statusBad bool
	// statusOn is the screen the status line was said on: it is shown there only
	// (a list's filter hint is not about the event opened from it).
	statusOn  screen
	confirm   *pendingAction
	detail    detailModel
	consumers consumersState
	// detailFrom is the mode esc returns to from the detail (the aggregate
	// timeline it was opened from, or normal).
	detailFrom mode
	// helpFrom is the mode the help screen was opened over, where any key returns.
	helpFrom  mode
	aggregate aggregateModel
	audit     auditModel
	// archivedOn: tab 5 shows Archived rather than Published.
	archivedOn bool
	// overviewSel is the Overview line enter opens; overviewShown are the lines
	// the last drawing showed that it can rest on, in screen order.
	overviewSel   overviewTarget
	overviewShown []overviewTarget
	// pane is what the Overview's lower half shows (t cycles it).
	pane overviewPane
	// bulk is the bulk action over a whole filter (bulk.go).
	bulk bulkState
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
		if !m.loading && m.now().Sub(m.loadStarted) >= m.refreshEvery() {
			cmds = append(cmds, m.startLoad())
		}
		return m, tea.Batch(cmds...)
	case loadedMsg:
		return m, m.onLoaded(msg)
	case lagLoadedMsg:
		m.onLagLoaded(msg)
		return m, nil
	case detailMsg:
		m.detail.set(msg)
		return m, nil
	case traceMsg:
		m.detail.setTrace(msg)
		return m, nil
	case timelineMsg:
		m.aggregate.set(msg, m.now())
		return m, nil
	case auditMsg:
		m.audit.set(msg, m.now())
		return m, nil
	case actionDoneMsg:
		return m, m.actionDone(msg)
	case terminateDoneMsg:
		return m, m.terminateDone(msg)
	case bulkStartedMsg, bulkProgressMsg, bulkDoneMsg:
		return m, m.bulkMsg(msg)
	case correctFileMsg, correctEditedMsg, correctFieldMsg, correctPreviewMsg, correctDoneMsg:
		return m, m.correctStep(msg)
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
		m.loadTook = msg.took
		m.overview = msg.overview
		m.trend.add(msg.overview.sample)
		if p := &m.overview.counts.Published; p.Estimate {
			p.Value = max(p.Value, m.publishedFloor)
		}
		m.publishedFloor = m.overview.counts.Published.Value
		if r := m.overview.relay; r != nil && !r.LastErrorAt.Equal(m.errAt) {
			m.errAt, m.pubAtErr = r.LastErrorAt, r.Published
		}
		if t := m.tables[msg.req.view]; t != nil && msg.req.filter.text == m.filters[msg.req.view].text &&
			msg.req.sort == t.sort && msg.req.desc == t.desc {
			t.SetRows(msg.rows)
			t.more, t.total, t.loaded = msg.more, msg.total, true
			t.scan = msg.scan
		}
	}
	// A banner (paused relay, broker unreachable) takes a line from the body.
	m.layout()
	if m.reloadWanted {
		return m.startLoad()
	}
	if msg.err == nil {
		return tea.Batch(m.refreshDetail(), m.refreshAggregate(), m.refreshAudit())
	}
	return nil
}

// tooSmall: the terminal is below MinWidth×MinHeight (or its size is not known yet).
func (m *Model) tooSmall() bool { return m.width < MinWidth || m.height < MinHeight }

// layout gives the components their sizes.
func (m *Model) layout() {
	w, h := m.bodySize()
	for _, t := range m.tables {
		t.SetSize(w, h-1)
	}
	m.detail.setSize(w, h)
	m.aggregate.setSize(w, h)
	m.audit.setSize(w, h)
	m.help.SetWidth(w)
}

// bodySize is the space between the header lines and the status and footer lines.
func (m *Model) bodySize() (int, int) {
	h := m.height - 4
	if m.bannerText() != "" {
		h--
	}
	if m.bulk.run != nil {
		h-- // the bulk run's progress row
	}
	return m.width, max(h, 1)
}

// listTotal is the number of events list view v stands for, as its title and its
// tab both show it. Unfiltered, that is the Overview's count of the state, raised
// to the rows loaded: they are there for certain, and an estimate (or a count
// taken a moment before the list was read) must not say fewer. Filtered, the
// list's own count.
func (m *Model) listTotal(v viewID) inspect.Count {
	t := m.tables[v]
	c, ok := m.stateCount(v)
	switch {
	case t == nil || !t.loaded:
		return c
	case !ok || m.filters[v].text != "":
		return t.total
	}
	return inspect.Count{Value: max(c.Value, int64(len(t.rows))), Estimate: c.Estimate, Bound: c.Bound}
}

// stateCount is the Overview's count for a list view's state.
func (m *Model) stateCount(v viewID) (inspect.Count, bool) {
	c := m.overview.counts
	switch v {
	case viewPending:
		return inspect.Count{Value: c.Pending, Bound: c.Bounds.Pending}, true
	case viewLeased:
		return inspect.Count{Value: c.Leased, Bound: c.Bounds.Leased}, true
	case viewFailed:
		return inspect.Count{Value: c.Failed, Bound: c.Bounds.Failed}, true
	case viewPublished:
		return c.Published, true
	case viewArchived:
		return c.Archived, true
	}
	return inspect.Count{}, false
}

// errorResolved: the relay's last error is history, the broker answers and events
// have been published since it was first seen.
func (m *Model) errorResolved() bool {
	r := m.overview.relay
	return r != nil && r.BrokerReachable && r.Published > m.pubAtErr
}

func (m *Model) setStatus(s string, bad bool) {
	m.status, m.statusBad, m.statusOn = s, bad, m.screen()
}

// screen is what the body shows: a view's list or Overview, or the detail, the
// timeline or the audit log over it.
type screen struct {
	over mode // modeNormal, or the mode of what is drawn over the view
	view viewID
}

// screen names what Render draws in the body (the help screen is the view's).
func (m *Model) screen() screen {
	switch {
	case m.mode == modeDetail || (m.mode == modeConfirm && m.detail.id != ""):
		return screen{over: modeDetail}
	case m.mode == modeAudit || (m.mode == modeFilter && m.audit.filtering):
		return screen{over: modeAudit}
	case m.mode == modeAggregate || (m.mode == modeConfirm && m.aggregate.table != nil):
		return screen{over: modeAggregate}
	}
	return screen{view: m.view}
}

// switchView shows tab v and loads it. Tab 5 opens on Published; v switches it
// to Archived until another tab is shown.
func (m *Model) switchView(v viewID) tea.Cmd {
	m.view = (v + viewCount) % viewCount
	switch {
	case m.view != viewPublished:
		m.archivedOn = false
	case m.archivedOn:
		m.view = viewArchived
	}
	m.status = ""
	return m.startLoad()
}

// toggleArchived switches tab 5 between Published and Archived.
func (m *Model) toggleArchived() tea.Cmd {
	if m.view.tab() != viewPublished {
		m.setStatus("v switches tab 5 between Published and Archived: press 5 first", false)
		return nil
	}
	m.archivedOn = m.view == viewPublished
	return m.switchView(viewPublished)
}

func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	if m.tooSmall() {
		// Nothing is drawn but the size notice: no key may act unseen.
		if key.Matches(msg, m.keys.Quit) {
			return tea.Quit
		}
		return nil
	}
	switch m.mode {
	case modeConfirm:
		return m.confirmKey(msg)
	case modeFilter:
		return m.filterKey(msg)
	case modeEdit:
		return m.fieldKey(msg)
	case modeHelp:
		if key.Matches(msg, m.keys.Quit) && msg.String() == "ctrl+c" {
			return tea.Quit
		}
		// Back to what help was opened over: dropped to the list instead, a
		// detail or timeline left open behind it would be drawn over the next
		// prompt and take its late reads.
		m.mode = m.helpFrom
		return nil
	}
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.helpFrom, m.mode = m.mode, modeHelp
		return nil
	case key.Matches(msg, k.Faster):
		return m.setRefresh(-1)
	case key.Matches(msg, k.Slower):
		return m.setRefresh(+1)
	case key.Matches(msg, k.Pause):
		return m.togglePause()
	case key.Matches(msg, k.Terminate):
		return m.terminateKey()
	case key.Matches(msg, k.Correct):
		return m.correctKey()
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
	if m.mode == modeAggregate {
		return m.aggregate.key(m, msg)
	}
	if m.mode == modeAudit {
		return m.audit.key(m, msg)
	}
	if key.Matches(msg, k.AuditLog) {
		return m.openAudit()
	}
	switch {
	case key.Matches(msg, k.NextView):
		return m.switchView(m.view.tab() + 1)
	case key.Matches(msg, k.PrevView):
		return m.switchView(m.view.tab() - 1)
	case key.Matches(msg, k.Archived):
		return m.toggleArchived()
	case key.Matches(msg, k.JumpView):
		return m.switchView(viewID(msg.String()[0] - '1'))
	}
	if m.view == viewOverview {
		return m.overviewKey(msg)
	}
	t := m.tables[m.view]
	if t == nil {
		return nil
	}
	switch {
	case key.Matches(msg, k.Detail):
		if r, ok := t.current(); ok {
			m.detailFrom = modeNormal
			return m.openDetail(r.id)
		}
	case key.Matches(msg, k.Aggregate):
		if r, ok := t.current(); ok {
			return m.openAggregate(r.rawType, r.rawID)
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
		m.markAllKey(t)
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
		if t.more && t.cursor >= len(t.rows)-1 {
			// At the end of what is loaded: the next page.
			t.want = max(t.want, m.opts.Limit) + m.opts.Limit
			return m.startLoad()
		}
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

// togglePause asks to pause or resume the embedded relay: pausing stops
// publishing for everyone the relay serves, so it goes through the confirm prompt
// like every other action.
func (m *Model) togglePause() tea.Cmd {
	r := m.opts.Relay
	if r == nil {
		m.setStatus("no relay is embedded in this console (--no-relay)", true)
		return nil
	}
	what := "pause"
	if r.Status().Paused {
		what = "resume"
	}
	m.confirm = &pendingAction{pause: what, view: m.view}
	m.mode = modeConfirm
	return nil
}

// runPause pauses or resumes the relay, off the UI loop.
func (m *Model) runPause(what string) tea.Cmd {
	r := m.opts.Relay
	return func() tea.Msg {
		// Pause and resume are audited first and refused when the audit row cannot
		// be written: the state read back says whether it happened.
		if what == "resume" {
			r.Resume()
			if r.Status().Paused {
				return statusMsg{text: "relay not resumed: the audit row could not be written", bad: true}
			}
			return statusMsg{text: "relay resumed"}
		}
		r.Pause()
		if !r.Status().Paused {
			return statusMsg{text: "relay not paused: the audit row could not be written", bad: true}
		}
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
			return statusMsg{text: termtext.Sanitize(err.Error()), bad: true}
		}
		return statusMsg{text: termtext.Sanitize(s)}
	}
}

// escIdle: esc would do nothing here (no prompt, detail, timeline, filter or
// marks to leave), so a fleet console may take it to mean "back to the fleet".
func (m *Model) escIdle() bool {
	if m.mode != modeNormal {
		return false
	}
	if t := m.tables[m.view]; t != nil && (len(t.markOrder) > 0 || m.filters[m.view].text != "") {
		return false
	}
	return true
}

var _ tea.Model = (*Model)(nil)

// refreshEvery is how often the views are read again: the chosen interval, or
// 10 × the last load's time when that is longer, so that one console costs the
// database at most a tenth of a backend however slow its reads get in an
// incident (a filtered list of a million failed events took 0.72 s a read; read
// every second, each viewer over SSH took most of a core from the relay). Keys,
// actions and filters still read at once.
func (m *Model) refreshEvery() time.Duration { return max(m.refresh, 10*m.loadTook) }
