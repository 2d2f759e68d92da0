package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// overviewVM is a Snapshot (and the relay's status) as the view model holds it:
// text sanitized, nothing else changed.
type overviewVM struct {
	takenAt       time.Time
	counts        inspect.Counts
	expiredLeases int64
	oldestPending time.Duration
	oldestReady   time.Duration
	// oldestPublishable: the relay's lag (ready and not waiting behind a blocker);
	// publishableApprox: none among the rows read, so at least this old.
	oldestPublishable time.Duration
	publishableApprox bool
	nextScheduled     *time.Time
	published         inspect.PublishedRecent
	partial           bool
	failedGroupsOf    int64
	sample            trendSample
	blockedCount      int64
	blockedEstimate   bool
	blocked           []blockedVM
	failedByError     []inspect.Group
	inbox             []inspect.Consumer
	tables            []inspect.TableHealth
	xmin              *inspect.XminHolder
	relay             *RelayStatus
	relays            relaysVM
	extras            []string

	// errorKeys are failedByError's keys as stored: the filter's argument.
	errorKeys []string
	types     []typeVM
	attempts  []inspect.AttemptsBucket
}

type blockedVM struct {
	aggregate string
	waiting   int64
	blocker   row
}

func newOverviewVM(s inspect.Snapshot, relay Relay, extras []Extra) overviewVM {
	vm := overviewVM{
		takenAt:       s.TakenAt,
		counts:        s.Counts,
		expiredLeases: s.ExpiredLeases,
		oldestPending: s.OldestPendingAge.Duration(),
		oldestReady:   s.OldestReadyAge.Duration(),
		nextScheduled: s.NextScheduledAt,
		published:     s.Published,
		blockedCount:  s.Blocked.Count,
		tables:        slices.Clone(s.Health.Tables), // sanitized below; the snapshot may be shared

		oldestPublishable: s.OldestPublishableAge.Duration(),
		publishableApprox: s.OldestPublishableApprox,
		partial:           s.Partial,
		failedGroupsOf:    s.FailedGroupsOf,
		sample:            sampleOf(s),
		blockedEstimate:   s.Blocked.Estimate,
		relays:            newRelaysVM(s),
	}
	for _, b := range s.Blocked.Aggregates {
		vm.blocked = append(vm.blocked, blockedVM{
			aggregate: Sanitize(b.AggregateType) + "/" + Sanitize(b.AggregateID),
			waiting:   b.Waiting,
			blocker:   newRow(b.Blocker),
		})
	}
	for _, g := range s.FailedByError {
		vm.failedByError = append(vm.failedByError, inspect.Group{Key: Sanitize(g.Key), Count: g.Count})
		vm.errorKeys = append(vm.errorKeys, g.Key)
	}
	for _, t := range s.ByEventType {
		vm.types = append(vm.types, typeVM{name: Sanitize(t.EventType), raw: t.EventType,
			ready: t.Ready, scheduled: t.Scheduled, leased: t.Leased, failed: t.Failed,
			oldest: t.OldestPendingAge.Duration(), pending: t.Ready+t.Scheduled > 0})
	}
	vm.attempts = slices.Clone(s.Attempts)
	for _, c := range s.Inbox {
		c.Name = Sanitize(c.Name)
		vm.inbox = append(vm.inbox, c)
	}
	for i := range vm.tables {
		vm.tables[i].Table = Sanitize(vm.tables[i].Table)
	}
	if x := s.Health.OldestXmin; x != nil {
		c := *x
		c.Name, c.State, c.Query = Sanitize(c.Name), Sanitize(c.State), Sanitize(c.Query)
		vm.xmin = &c
	}
	if relay != nil {
		st := relay.Status()
		st.LastError = Sanitize(st.LastError)
		vm.relay = &st
	}
	for _, e := range extras {
		if e.State != nil {
			vm.extras = append(vm.extras, Sanitize(e.Key.Help().Desc)+": "+Sanitize(e.State()))
		}
	}
	return vm
}

// since is how long ago the snapshot was taken, by the console's clock: ages read
// in the database move on between refreshes. Adding it to an age read at takenAt
// gives the age at now (negative when the clocks disagree; age() floors at 0).
func (vm overviewVM) since(now time.Time) time.Duration {
	if vm.takenAt.IsZero() {
		return 0
	}
	return now.Sub(vm.takenAt)
}

const sparkBars = "▁▂▃▄▅▆▇█"

// sparkline draws the last samples (events/s per refresh) in width cells.
func sparkline(samples []float64, width int) string {
	if len(samples) > width {
		samples = samples[len(samples)-width:]
	}
	peak := 0.0
	for _, s := range samples {
		peak = max(peak, s)
	}
	bars := []rune(sparkBars)
	var b strings.Builder
	for _, s := range samples {
		i := 0
		if peak > 0 {
			i = min(int(s/peak*float64(len(bars)-1)+0.5), len(bars)-1)
		}
		b.WriteRune(bars[i])
	}
	return b.String()
}

// num is a count as the console shows it: "~" before an estimate.
func num(n int64, estimate bool) string {
	if estimate {
		return "~" + itoa64(n)
	}
	return itoa64(n)
}

// rate is events per second, to one decimal.
func rate(r float64) string { return fmt.Sprintf("%.1f/s", r) }

// viewOverview draws the Overview in w×h.
func (m *Model) viewOverview(w, h int) string {
	vm, st, now := m.overview, m.styles, m.now()
	since := vm.since(now)
	kv := func(k, v string) string { return fmt.Sprintf("%-14s %s", k, v) }
	c, a := vm.counts, vm.counts.Approx

	left := []string{st.section.Render("OUTBOX")}
	left = append(left, kv("ready", num(c.Ready, a.Ready)))
	if c.Ready > 0 {
		lag := age(vm.oldestPublishable + since)
		if vm.publishableApprox {
			lag = "≥" + lag
		}
		if c.Ready-c.Waiting == 0 {
			lag = "-"
		}
		left = append(left, kv(" publishable", num(c.Ready-c.Waiting, a.Ready || a.Waiting)+" · lag "+lag))
	}
	if c.Waiting > 0 {
		left = append(left, kv(" waiting", st.warn.Render(num(c.Waiting, a.Waiting))+" behind blockers"))
	}
	sched := num(c.Scheduled, a.Scheduled)
	if vm.nextScheduled != nil {
		sched += " · next in " + age(vm.nextScheduled.Sub(now))
	}
	leased := num(c.Leased, a.Leased)
	if vm.expiredLeases > 0 {
		leased += " · " + st.warn.Render(itoa64(vm.expiredLeases)+" expired")
	}
	left = append(left,
		kv("scheduled", sched),
		kv("leased", leased),
		kv("failed", failedText(num(c.Failed, a.Failed), c.Failed, st)),
	)
	if c.Pending > 0 {
		left = append(left, kv("oldest pending", age(vm.oldestPending+since)))
	} else {
		left = append(left, kv("oldest pending", "-"))
	}
	p := vm.published
	left = append(left,
		kv("published", "1m "+p.Last1m.String()+" · 5m "+p.Last5m.String()),
		kv(" last hour", p.Last1h.String()),
	)
	tr := m.trend
	in := st.dim.Render("measuring…")
	if r, ok := tr.incoming(); ok {
		in = rate(r)
	}
	left = append(left, kv("rate out · in", rate(p.CurrentPerSecond)+" · "+in))
	backlog := st.dim.Render("measuring…")
	if r, ok := tr.backlogRate(); ok {
		switch d, drains := tr.drain(); {
		case c.Ready+c.Scheduled+c.Leased == 0:
			backlog = "empty"
		case drains:
			backlog = st.good.Render("shrinking") + " · empty in ~" + age(d)
		case r > 0:
			backlog = st.warn.Render("growing") + " +" + rate(r)
		default:
			backlog = "steady"
		}
	}
	left = append(left, kv("backlog", backlog), kv("out, 10s", sparkline(tr.currents(), 24)))

	right := []string{st.section.Render("RELAY")}
	if r := vm.relay; r == nil {
		right = append(right, kv("state", "none in this process"))
	} else {
		state := st.good.Render("running")
		if r.Paused {
			state = st.paused.Render(" PAUSED ") + " (p resumes)"
		}
		broker := st.good.Render("reachable")
		if !r.BrokerReachable {
			broker = st.bad.Render("UNREACHABLE")
		}
		right = append(right,
			kv("state", state),
			kv("broker", broker),
			kv("last batch", fmt.Sprintf("%d ev in %s", r.LastBatch, ms(r.LastPublish))),
			kv("last claim", ms(r.LastClaim)+fmt.Sprintf(" · %d in flight", r.InFlight)),
			kv("published", fmt.Sprint(r.Published)),
			kv("fail · retry", fmt.Sprintf("%d · %d", r.Failed, r.Retried)),
		)
		switch {
		case r.LastError == "":
			right = append(right, kv("last error", "-"))
		case m.errorResolved():
			right = append(right, kv("last error", st.dim.Render(age(now.Sub(r.LastErrorAt))+" ago, since resolved")))
			right = append(right, wrapLines(r.LastError, w-w/2-2, 3, st.dim)...)
		default:
			right = append(right, kv("last error", st.bad.Render(age(now.Sub(r.LastErrorAt))+" ago")))
			right = append(right, wrapLines(r.LastError, w-w/2-2, 3, st.bad)...)
		}
	}
	for _, e := range vm.extras {
		right = append(right, st.warn.Render(e))
	}
	// Every relay process the outbox knows of (heartbeats, lease holders), then
	// as many of them as fit beside the OUTBOX column: the list never pushes the
	// incident sections down.
	right = append(right, kv("relays seen", m.relaysSummary()))
	right = append(right, m.relayLines(len(left)-len(right), w-w/2, since)...)

	colW := w / 2
	lines := joinColumns(left, right, colW, w-colW)

	var sel overviewTarget
	draw := func(mark bool) ([]string, []overviewTarget) {
		return m.overviewSections(w, h-len(lines), func(t overviewTarget) bool { return mark && t == sel })
	}
	below, shown := draw(false)
	// The cursor stays on a line in view: the first one when its line is gone.
	if len(shown) > 0 {
		sel = shown[0]
		for _, t := range shown {
			if t == m.overviewSel {
				sel = t
			}
		}
		below, _ = draw(true)
	}
	m.overviewShown = shown
	return clip(append(lines, below...), w, h)
}

// overviewSections lays out the Overview's lower half in room lines: the pane's
// sections first (by default the blocked aggregates and the error groups, what an
// incident is about), then, in the room they leave, the breakdowns and the
// tables. It returns the lines and the targets they show, in order.
func (m *Model) overviewSections(w, room int, on func(overviewTarget) bool) ([]string, []overviewTarget) {
	vm, st, now := m.overview, m.styles, m.now()
	var blocked, failed, tables []string
	for i, b := range vm.blocked {
		// How long it has blocked: a failed blocker since it failed; a scheduled
		// one until its next attempt.
		state := string(b.blocker.state)
		switch {
		case b.blocker.failedAt != nil:
			state += " " + age(now.Sub(*b.blocker.failedAt))
		case b.blocker.state == wire.Scheduled && b.blocker.availableAt.After(now):
			state = "retry in " + age(b.blocker.availableAt.Sub(now))
		}
		s := fmt.Sprintf("%-18s %2d waiting behind %s %s", b.aggregate, b.waiting, b.blocker.short, state)
		if b.blocker.lastError != "" {
			s += ": " + b.blocker.lastError
		}
		blocked = append(blocked, cursorLine(s, on(overviewTarget{targetBlocked, i}), w, st))
	}
	if len(blocked) == 0 {
		blocked = []string{st.dim.Render("  none")}
	}
	for i, g := range vm.failedByError {
		failed = append(failed, cursorLine(fmt.Sprintf("%5d  %s", g.Count, g.Key), on(overviewTarget{targetError, i}), w, st))
	}
	failedTitle := "FAILED BY ERROR"
	if vm.failedGroupsOf > 0 {
		failedTitle += fmt.Sprintf(" (newest %d)", vm.failedGroupsOf)
	}
	for _, t := range vm.tables {
		tables = append(tables, fmt.Sprintf("  %-22s live %-8d dead %-8d %s + idx %s",
			t.Table, t.LiveTuples, t.DeadTuples, size(t.TableBytes), size(t.IndexBytes)))
	}
	if x := vm.xmin; x != nil {
		tables = append(tables, st.warn.Render(fmt.Sprintf("  vacuum held back %s by %s %s (%s)", age(x.Age.Duration()), x.Kind, x.Name, x.State)))
	}
	blockedSec := section{"BLOCKED AGGREGATES (" + num(vm.blockedCount, vm.blockedEstimate) + ")", blocked, vm.blockedCount, vm.blockedEstimate}
	failedSec := section{title: failedTitle, body: failed}
	typesSec, attempts := m.breakdownLines(w, on)
	tablesSec := section{title: "TABLES", body: tables}
	// Which targets each section's lines stand for.
	kinds := map[string]targetKind{failedSec.title: targetError}
	if len(vm.blocked) > 0 {
		kinds[blockedSec.title] = targetBlocked
	}
	if len(vm.types) > 0 {
		kinds[typesSec.title] = targetType
	}

	// The pane's own sections first; what room they leave goes to the others
	// (the attempts line before them).
	var first, then []section
	var lines []string
	switch m.pane {
	case paneIncident:
		first, then = []section{blockedSec, failedSec}, []section{typesSec, tablesSec}
	case paneTypes:
		// The attempts line heads the types, without the blank line between.
		lines, room = attempts, room-len(attempts)+1
		first, then, attempts = []section{typesSec}, []section{failedSec}, nil
	case paneErrors:
		first, then = []section{failedSec}, []section{typesSec, tablesSec}
	}
	more, shownFirst := sections(room, st, first...)
	rest := room - len(more)
	if m.pane == paneTypes && len(more) > 0 {
		more = more[1:]
	}
	lines = append(lines, more...)
	var shownThen []int
	if rest > len(attempts) {
		more, shownThen = sections(rest-len(attempts), st, then...)
		if len(more) > 0 {
			lines = append(append(lines, attempts...), more...)
		}
	}
	var shown []overviewTarget
	add := func(ss []section, n []int) {
		for i, c := range n {
			if k, ok := kinds[ss[i].title]; ok {
				for j := range c {
					shown = append(shown, overviewTarget{k, j})
				}
			}
		}
	}
	add(first, shownFirst)
	add(then, shownThen)
	return lines, shown
}

type section struct {
	title string
	body  []string
	// total, when set, is how many items the body's lines stand for (the body may
	// hold only the first few): "… N more" counts from it.
	total    int64
	estimate bool
}

// sections lays out titled sections (a blank line, the title, the body) in room
// lines, in priority order: trailing sections that cannot show one line are left
// out, and a section cut short ends in "… N more".
func sections(room int, st styles, ss ...section) ([]string, []int) {
	need := func(ss []section) int { // a section wants its heading and two lines
		n := 0
		for _, s := range ss {
			n += 2 + min(len(s.body), 2)
		}
		return n
	}
	for len(ss) > 0 && need(ss) > room {
		ss = ss[:len(ss)-1]
	}
	shown := make([]int, len(ss))
	left := room
	for i := range ss {
		body := ss[i].body
		shown[i] = len(body)
		avail := left - 2 - need(ss[i+1:])
		total := max(ss[i].total, int64(len(body)))
		switch {
		case len(body) > avail:
			keep := max(avail-1, 0)
			body = append(body[:keep:keep], st.dim.Render("  … "+num(total-int64(keep), ss[i].estimate)+" more"))
			shown[i] = keep
		case total > int64(len(body)) && len(body) < avail:
			body = append(body[:len(body):len(body)], st.dim.Render("  … "+num(total-int64(len(body)), ss[i].estimate)+" more"))
		case total > int64(len(body)) && len(body) > 0:
			keep := len(body) - 1
			body = append(body[:keep:keep], st.dim.Render("  … "+num(total-int64(keep), ss[i].estimate)+" more"))
			shown[i] = keep
		}
		ss[i].body = body
		left -= 2 + len(body)
	}
	var lines []string
	for _, s := range ss {
		if len(s.body) > 0 {
			lines = append(lines, "", st.section.Render(s.title))
			lines = append(lines, s.body...)
		}
	}
	return lines, shown
}

func failedText(text string, n int64, st styles) string {
	if n > 0 {
		return st.bad.Render(text)
	}
	return text
}

func itoa64(n int64) string { return fmt.Sprint(n) }

// wrapLines wraps s to width in at most n lines (the last one cut with …), each
// indented by two spaces and styled.
func wrapLines(s string, width, n int, style lipgloss.Style) []string {
	lines := strings.Split(ansi.Wrap(s, max(width, 10), " "), "\n")
	if len(lines) > n {
		lines[n-1] = ansi.Truncate(lines[n-1]+" "+strings.Join(lines[n:], " "), max(width, 10), "…")
		lines = lines[:n]
	}
	for i, l := range lines {
		lines[i] = "  " + style.Render(l)
	}
	return lines
}

// joinColumns sets two lists of lines side by side.
func joinColumns(left, right []string, lw, rw int) []string {
	n := max(len(left), len(right))
	out := make([]string, n)
	for i := range n {
		var l, r string
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		out[i] = lipgloss.NewStyle().Width(lw).MaxWidth(lw).Render(ansi.Truncate(l, lw-1, "…")) + ansi.Truncate(r, rw, "…")
	}
	return out
}

// clip truncates lines to w cells and the list to h lines.
func clip(lines []string, w, h int) string {
	if len(lines) > h {
		lines = lines[:h]
	}
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, w, "…")
	}
	return strings.Join(lines, "\n")
}

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d kB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
