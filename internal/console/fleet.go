package console

import (
	"context"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/internal/fleet"
)

// FleetSource supplies the fleet's rows, worst first; *fleet.Poller is one.
// Rows must be quick: it is read on every refresh, from memory.
type FleetSource interface {
	Rows() []fleet.Row
}

// FleetOptions configure the fleet console: one row per outbox, enter opens
// that outbox's console, esc or q comes back.
type FleetOptions struct {
	// Source supplies the rows. Required.
	Source FleetSource
	// Title names the fleet in the header (the fleet file).
	Title string
	// Open makes the console of the outbox named name: its Options (Inspector
	// required) and what to call when the operator leaves it. It runs off the UI
	// loop, bounded by ctx. Required.
	Open func(ctx context.Context, name string) (Options, func(), error)
	// Refresh is how often the rows are read again (default 1 s).
	Refresh time.Duration
	// Context bounds everything (default context.Background()).
	Context context.Context
	// Terminal: as in Options.
	Terminal *Terminal
}

// FleetModel is the fleet console's root model. While an outbox's console is
// open it owns the screen and every key but those that leave it, as in k9s:
// esc when it has nothing else to close, q when q would have quit it. ctrl+c
// quits from anywhere.
type FleetModel struct {
	opts          FleetOptions
	styles        styles
	help          help.Model
	keys          KeyMap
	width, height int

	rows     []fleet.Row // all of them, worst first
	shown    []fleet.Row // those the filter keeps
	selected string      // the outbox under the cursor, kept across re-sorts
	cursor   int

	filter      string
	filtering   bool
	filterInput []rune
	helping     bool // the ? screen is shown

	status    string
	statusBad bool
	opening   string

	// inner is the open outbox's console; gen tells its messages from those of
	// one closed before.
	inner      *Model
	innerName  string
	innerClose func()
	innerStop  context.CancelFunc
	gen        int
}

// NewFleet returns the fleet console's model.
func NewFleet(opts FleetOptions) *FleetModel {
	if opts.Refresh <= 0 {
		opts.Refresh = time.Second
	}
	if opts.Context == nil {
		opts.Context = context.Background()
	}
	m := &FleetModel{opts: opts, styles: newStyles(), help: help.New(), keys: DefaultKeyMap()}
	m.setRows(opts.Source.Rows())
	return m
}

type fleetTickMsg struct{}

// fleetOpenedMsg is an outbox's console, ready (or why not).
type fleetOpenedMsg struct {
	name  string
	opts  Options
	close func()
	err   error
}

// innerMsg is a message of the open console generation gen.
type innerMsg struct {
	gen int
	msg tea.Msg
}

// Init starts the refresh.
func (m *FleetModel) Init() tea.Cmd { return m.tick() }

func (m *FleetModel) tick() tea.Cmd {
	return tea.Tick(m.opts.Refresh, func(time.Time) tea.Msg { return fleetTickMsg{} })
}

// Update handles one message.
func (m *FleetModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		if m.inner != nil {
			_, cmd := m.inner.Update(msg)
			return m, m.wrap(cmd)
		}
		return m, nil
	case fleetTickMsg:
		m.setRows(m.opts.Source.Rows())
		return m, m.tick()
	case fleetOpenedMsg:
		return m, m.opened(msg)
	case innerMsg:
		if m.inner == nil || msg.gen != m.gen {
			return m, nil // from a console closed since
		}
		_, cmd := m.inner.Update(msg.msg)
		return m, m.wrap(cmd)
	case tea.KeyPressMsg:
		if m.inner != nil {
			// As in k9s: esc (when the console has nothing else to close) and q
			// (when it is not typed text or a prompt's answer) go back; ctrl+c
			// quits from anywhere.
			if (msg.Code == tea.KeyEscape && m.inner.escIdle()) || (msg.String() == "q" && m.inner.quitsOnQ()) {
				m.closeInner()
				m.setStatus("", false)
				return m, nil
			}
			_, cmd := m.inner.Update(msg)
			return m, m.wrap(cmd)
		}
		return m, m.key(msg)
	}
	return m, nil
}

// wrap tags the open console's commands with its generation, batches included,
// so Update routes their messages back to it and drops those of a closed one.
func (m *FleetModel) wrap(cmd tea.Cmd) tea.Cmd { return wrapGen(cmd, m.gen) }

func wrapGen(cmd tea.Cmd, gen int) tea.Cmd {
	if cmd == nil {
		return nil
	}
	return func() tea.Msg {
		switch msg := cmd().(type) {
		case nil:
			return nil
		case tea.QuitMsg:
			return msg
		case tea.BatchMsg:
			out := make(tea.BatchMsg, 0, len(msg))
			for _, c := range msg {
				if c != nil {
					out = append(out, wrapGen(c, gen))
				}
			}
			return out
		default:
			return innerMsg{gen, msg}
		}
	}
}

func (m *FleetModel) setStatus(s string, bad bool) { m.status, m.statusBad = s, bad }

// setRows takes new rows and keeps the cursor on the outbox it was on.
func (m *FleetModel) setRows(rows []fleet.Row) {
	m.rows = rows
	m.shown = m.shown[:0]
	for _, r := range rows {
		if rowMatches(r, m.filter) {
			m.shown = append(m.shown, r)
		}
	}
	m.cursor = 0
	for k, r := range m.shown {
		if r.Name == m.selected {
			m.cursor = k
		}
	}
	if len(m.shown) > 0 {
		m.selected = m.shown[m.cursor].Name
	}
}

// rowMatches: every word of filter matches, a KEY=VALUE word a label, any other
// word a part of the outbox's name.
func rowMatches(r fleet.Row, filter string) bool {
	for _, w := range strings.Fields(filter) {
		if k, v, ok := strings.Cut(w, "="); ok {
			if got, has := r.Labels[k]; !has || got != v {
				return false
			}
		} else if !strings.Contains(r.Name, w) {
			return false
		}
	}
	return true
}

func (m *FleetModel) key(msg tea.KeyPressMsg) tea.Cmd {
	if m.filtering {
		return m.filterKey(msg)
	}
	k := m.keys
	if m.helping {
		// Any key closes the help screen; ctrl+c still quits.
		m.helping = false
		if msg.String() == "ctrl+c" {
			return tea.Quit
		}
		return nil
	}
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.helping = true
	case key.Matches(msg, k.Down):
		m.move(1)
	case key.Matches(msg, k.Up):
		m.move(-1)
	case key.Matches(msg, k.Top):
		m.move(-len(m.shown))
	case key.Matches(msg, k.Bottom):
		m.move(len(m.shown))
	case key.Matches(msg, k.Filter):
		m.filtering, m.filterInput = true, []rune(m.filter)
	case key.Matches(msg, k.Back):
		if m.filter != "" {
			m.filter = ""
			m.setRows(m.rows)
			m.setStatus("filter cleared", false)
		}
	case key.Matches(msg, k.Detail):
		return m.open()
	}
	return nil
}

func (m *FleetModel) move(d int) {
	if len(m.shown) == 0 {
		return
	}
	m.cursor = min(max(m.cursor+d, 0), len(m.shown)-1)
	m.selected = m.shown[m.cursor].Name
}

func (m *FleetModel) filterKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.Code {
	case tea.KeyEnter:
		m.filtering = false
		m.filter = strings.TrimSpace(string(m.filterInput))
		m.setRows(m.rows)
	case tea.KeyEscape:
		m.filtering = false
	case tea.KeyBackspace:
		if n := len(m.filterInput); n > 0 {
			m.filterInput = m.filterInput[:n-1]
		}
	default:
		if msg.Text != "" && len(m.filterInput) < 200 {
			m.filterInput = append(m.filterInput, []rune(termtext.Sanitize(msg.Text))...)
		}
	}
	return nil
}

// open asks for the console of the outbox under the cursor.
func (m *FleetModel) open() tea.Cmd {
	if len(m.shown) == 0 || m.opening != "" {
		return nil
	}
	name := m.shown[m.cursor].Name
	m.opening = name
	m.setStatus("opening "+name+"…", false)
	ctx := m.opts.Context
	open := m.opts.Open
	return func() tea.Msg {
		o, closeFn, err := open(ctx, name)
		return fleetOpenedMsg{name: name, opts: o, close: closeFn, err: err}
	}
}

func (m *FleetModel) opened(msg fleetOpenedMsg) tea.Cmd {
	m.opening = ""
	if msg.err != nil {
		if msg.close != nil {
			msg.close()
		}
		m.setStatus(termtext.Sanitize(termtext.OneLine(msg.err.Error())), true)
		return nil
	}
	if msg.opts.Inspector == nil {
		if msg.close != nil {
			msg.close()
		}
		m.setStatus("cannot open "+msg.name+": no inspector", true)
		return nil
	}
	m.gen++
	ctx, stop := context.WithCancel(m.opts.Context)
	o := msg.opts
	o.Context = ctx
	if o.Name == "" {
		o.Name = msg.name
	}
	o.Terminal = m.opts.Terminal
	m.inner, m.innerName, m.innerClose, m.innerStop = New(o), msg.name, msg.close, stop
	// Its footer and help screen say what q does here.
	m.inner.keys.Quit.SetHelp("q", "back to fleet")
	m.setStatus("", false)
	_, cmd := m.inner.Update(tea.WindowSizeMsg{Width: m.width, Height: m.height})
	return tea.Batch(m.wrap(cmd), m.wrap(m.inner.Init()))
}

// closeInner leaves the open console: its loads are cancelled, its pool closed.
func (m *FleetModel) closeInner() {
	if m.inner == nil {
		return
	}
	m.innerStop()
	if m.innerClose != nil {
		go m.innerClose() // a pool closes once its loads, now cancelled, let go
	}
	m.inner, m.innerClose, m.innerStop = nil, nil, nil
	m.gen++
}

// Close leaves an open console, if any.
func (m *FleetModel) Close() { m.closeInner() }

// View renders the fleet, or the open outbox's console.
func (m *FleetModel) View() tea.View {
	if m.inner != nil {
		return m.inner.View()
	}
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = windowTitle
	return v
}

// Render is the fleet screen's content.
func (m *FleetModel) Render() string {
	if m.inner != nil {
		return m.inner.Render()
	}
	switch {
	case m.width == 0 || m.height == 0:
		return ""
	case m.width < MinWidth || m.height < MinHeight:
		return fmt.Sprintf("outboxtop needs %d×%d\n(this terminal is %d×%d)", MinWidth, MinHeight, m.width, m.height)
	}
	st := m.styles
	if m.helping {
		return strings.Join([]string{m.headerLine(), m.helpScreen(m.width, m.height-3), m.statusLine(), m.footer()}, "\n")
	}
	lines := []string{m.headerLine(), st.header.Render(fit(m.columns().header(), m.width, false))}
	h := m.height - 4
	first := 0
	if m.cursor >= h {
		first = m.cursor - h + 1
	}
	cols := m.columns()
	for k := first; k < len(m.shown) && len(lines) < h+2; k++ {
		r := m.shown[k]
		line := fit(cols.row(r), m.width, false)
		switch {
		case k == m.cursor:
			line = st.cursor.Render(line)
		case !r.Reachable:
			line = st.dim.Render(line)
		}
		lines = append(lines, line)
	}
	if len(m.shown) == 0 {
		lines = append(lines, st.dim.Render(fit("  no outbox matches the filter (esc clears it)", m.width, false)))
	}
	for len(lines) < h+2 {
		lines = append(lines, "")
	}
	return strings.Join(append(lines, m.statusLine(), m.footer()), "\n")
}

func (m *FleetModel) headerLine() string {
	st := m.styles
	left := st.title.Render("outboxtop fleet")
	if m.opts.Title != "" {
		left += " · " + termtext.Sanitize(m.opts.Title)
	}
	var counts [fleet.Unknown + 1]int
	for _, r := range m.rows {
		counts[r.Level]++
	}
	right := fmt.Sprintf("%d outboxes", len(m.rows))
	for l := fleet.Unknown; l >= fleet.OK; l-- {
		if counts[l] > 0 {
			right += fmt.Sprintf(" · %d %s", counts[l], strings.ToLower(l.String()))
		}
	}
	pad := m.width - ansi.StringWidth(left) - ansi.StringWidth(right)
	if pad < 1 {
		return ansi.Truncate(left+" "+right, m.width, "…")
	}
	return left + strings.Repeat(" ", pad) + right
}

func (m *FleetModel) statusLine() string {
	st := m.styles
	switch {
	case m.filtering:
		return st.prompt.Render(fitEnd(" filter (team=payments, or part of a name): "+string(m.filterInput)+"█", m.width))
	case m.status != "" && m.statusBad:
		return st.bad.Render(fit(" "+m.status, m.width, false))
	case m.status != "":
		return fit(" "+m.status, m.width, false)
	case m.filter != "":
		return fit(fmt.Sprintf(" filter %s: %d of %d outboxes (esc clears)", m.filter, len(m.shown), len(m.rows)), m.width, false)
	}
	return ""
}

func (m *FleetModel) footer() string {
	k := m.keys
	var b []key.Binding
	switch {
	case m.filtering:
		b = []key.Binding{helpOnly("enter", "apply"), helpOnly("esc", "cancel"), helpOnly("backspace", "delete")}
	case m.helping:
		b = []key.Binding{helpOnly("any key", "close help"), helpOnly("ctrl+c", "quit")}
	default:
		b = []key.Binding{helpOnly("enter", "open outbox"), helpOnly("/", "filter")}
		if m.filter != "" {
			b = append(b, helpOnly("esc", "clear filter"))
		}
		b = append(b, helpOnly("j/k", "move"), k.Help, k.Quit)
	}
	return ansi.Truncate(m.help.ShortHelpView(b), m.width, "…")
}

// helpScreen is the fleet's ? screen: its keys, those that leave an outbox's
// console, and what the columns mean.
func (m *FleetModel) helpScreen(w, h int) string {
	st := m.styles
	line := func(k, desc string) string { return "  " + fit(k, 10, false) + " " + desc }
	left := []string{
		st.section.Render("FLEET"),
		line("enter", "open the outbox's console"),
		line("j/↓ k/↑", "down, up"),
		line("g G", "top, bottom"),
		line("/", "filter: team=payments, or"),
		line("", "part of an outbox's name"),
		line("esc", "clear the filter"),
		line("?", "this help"),
		line("q ctrl+c", "quit"),
		"",
		st.section.Render("IN AN OUTBOX'S CONSOLE"),
		line("esc", "back to the fleet (once"),
		line("", "nothing else is open)"),
		line("q", "back to the fleet"),
		line("ctrl+c", "quit outboxtop"),
		line("?", "that console's keys"),
	}
	right := []string{
		st.section.Render("COLUMNS (worst outboxes first)"),
		line("LVL", "OK WARN CRIT UNKN"),
		line("PUBLISH", "publishable events"),
		line("OLDEST", "the oldest of them waited"),
		line("IN/S OUT/S", "added, published a second"),
		line("FAILED", "dead events"),
		line("BLOCKD", "blocked aggregates"),
		line("RELAY", "relays live (heartbeat or lease); none!: no relay while events wait"),
		line("LAG", "largest consumer lag"),
		line("LAG AGE", "oldest unconsumed record"),
		line("CONDITION", "the worst thing, or ok"),
		"",
		st.dim.Render("LAG: outboxes with brokers; below 100"),
		st.dim.Render("columns in IN/S's place, without AGE."),
		st.dim.Render("A lag past a threshold, or brokers"),
		st.dim.Render("that do not answer: the CONDITION."),
	}
	lines := joinColumns(left, right, w/2, w-w/2)
	for len(lines) < h {
		lines = append(lines, "")
	}
	return clip(lines, w, h)
}

// fleetColumns lay the fleet table out in a width.
type fleetColumns struct {
	width int
	// lag: some outbox names brokers. Below fleetLagWidth the LAG column takes
	// IN/S's place (at 80 columns the condition keeps its room) and the age of
	// the oldest unconsumed record is left to the condition when it crosses a
	// threshold; from fleetLagWidth on both show beside IN/S.
	lag, lagAge, in bool
	labels          bool // wide enough for a labels column
}

// Below these widths the condition would be squeezed: the labels (25 cells)
// give way first, then the lag's age and IN/S.
const (
	fleetLagWidth          = 100
	fleetLabelsWidth       = 110
	fleetLabelsAndLagWidth = 130
)

func (m *FleetModel) columns() fleetColumns {
	c := fleetColumns{width: m.width, in: true}
	for _, r := range m.rows {
		if len(r.Brokers) > 0 {
			c.lag = true
		}
	}
	if c.lag {
		c.lagAge = m.width >= fleetLagWidth
		c.in = c.lagAge
	}
	c.labels = m.width >= fleetLabelsWidth && (!c.lag || m.width >= fleetLabelsAndLagWidth)
	return c
}

// cells lays out a row's (or the header's) cells; the condition follows.
func (c fleetColumns) cells(lvl, name, publish, oldest, in, out, failed, blocked, lease, lag, lagAge, labels string) string {
	s := fmt.Sprintf("%-4s %-12s %7s %6s", lvl, name, publish, oldest)
	if c.in {
		s += fmt.Sprintf(" %6s", in)
	}
	s += fmt.Sprintf(" %6s %6s %6s %5s", out, failed, blocked, lease)
	if c.lag {
		s += fmt.Sprintf(" %6s", lag)
	}
	if c.lagAge {
		s += fmt.Sprintf(" %7s", lagAge)
	}
	if c.labels {
		s += " " + fit(labels, 24, false)
	}
	return s
}

func (c fleetColumns) header() string {
	return c.cells("LVL", "OUTBOX", "PUBLISH", "OLDEST", "IN/S", "OUT/S", "FAILED", "BLOCKD", "RELAY", "LAG", "LAG AGE", "LABELS") + " CONDITION"
}

var levelShort = [...]string{"OK", "WARN", "CRIT", "UNKN"}

func (c fleetColumns) row(r fleet.Row) string {
	name := fit(termtext.Sanitize(r.Name), 12, false)
	lvl := levelShort[r.Level]
	if !r.Reachable {
		reason := "polling…"
		if r.Polled {
			reason = "unreachable: " + termtext.Sanitize(r.Reason)
		}
		// The reason takes the numbers' place: nothing else is known.
		return fmt.Sprintf("%-4s %s ", lvl, name) + reason
	}
	in := "-"
	if r.RateIn != nil {
		in = fmt.Sprintf("%.1f", *r.RateIn)
	}
	lease := strconv.Itoa(r.Relays)
	if r.NoRelay {
		lease = "none!"
	}
	lag, lagAge := lagCells(r)
	return c.cells(lvl, name, r.PublishableBound.Format(r.Publishable), age(r.OldestPublishableAge.Duration()),
		in, fmt.Sprintf("%.1f", r.RateOut), r.FailedBound.Format(r.Failed), r.BlockedBound.Format(r.Blocked), lease,
		lag, lagAge, termtext.Sanitize(labelString(r.Labels))) + " " + termtext.Sanitize(r.Condition())
}

// lagCells are a row's LAG and LAG AGE: "-" without brokers (or no group
// reading the outbox's topics), "…" before the first check, "?" when no group
// could be measured.
func lagCells(r fleet.Row) (string, string) {
	l := r.Lag
	switch {
	case len(r.Brokers) == 0:
		return "-", "-"
	case l == nil:
		return "…", "…"
	case l.MaxLagGroup == "" && l.Problem != "":
		return "?", "?"
	case l.MaxLagGroup == "":
		return "-", "-"
	}
	a := "-"
	if l.OldestAge != nil {
		a = age(l.OldestAge.Duration())
	}
	return itoa64(l.MaxLag), a
}

func labelString(labels map[string]string) string {
	return fleet.Outbox{Labels: labels}.LabelString()
}

// RunFleet runs the fleet console until the operator quits or opts.Context ends.
func RunFleet(opts FleetOptions) error {
	m := NewFleet(opts)
	defer m.Close()
	return runProgram(m.opts.Context, m, opts.Terminal)
}

// quitsOnQ: q would quit this console here (it is not text typed into a
// filter, an answer to a prompt, or closing the help screen), so the fleet
// console takes it to mean "back to the fleet".
func (m *Model) quitsOnQ() bool {
	return m.tooSmall() || (m.mode != modeConfirm && m.mode != modeFilter && m.mode != modeHelp)
}
