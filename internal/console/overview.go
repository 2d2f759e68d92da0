package console

import (
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"slices"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/internal/inspect"
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
	// oldestPendingBound: LowerBound when the age is of the rows read only.
	oldestPendingBound inspect.Bound
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
	blockedBound      inspect.Bound
	// blockedRank: what of the blocked list is ranked against every blocked
	// aggregate, when not all of it ("": every line is; inspect.Blocked.Ranked).
	blockedRank string
	// order is the commit-order mode and its unserialized aggregates (the
	// list is status's).
	order         inspect.Order
	blocked       []blockedVM
	failedByError []inspect.Group
	inbox         []inspect.Consumer
	tables        []inspect.TableHealth
	xmin          *inspect.XminHolder
	horizon       *horizonVM // the xmin horizon held (nil: not held)
	relay         *RelayStatus
	relays        relaysVM
	// missingTopics: what the rows say of topics that do not exist (sanitized).
	missingTopics []MissingTopic
	extras        []string

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

		oldestPendingBound: s.OldestPendingBound,
		nextScheduled:      s.NextScheduledAt,
		published:          s.Published,
		blockedCount:       s.Blocked.Count,
		tables:             slices.Clone(s.Health.Tables), // sanitized below; the snapshot may be shared

		oldestPublishable: s.OldestPublishableAge.Duration(),
		publishableApprox: s.OldestPublishableApprox,
		partial:           s.Partial,
		failedGroupsOf:    s.FailedGroupsOf,
		sample:            sampleOf(s),
		blockedBound:      s.Blocked.Bound,
		order: inspect.Order{Mode: s.Order.Mode, Unserialized: s.Order.Unserialized, Bound: s.Order.Bound,
			Waiting: s.Order.Waiting, Holders: slices.Clone(s.Order.Holders)},
		relays: newRelaysVM(s),
	}
	for _, b := range s.Blocked.Aggregates {
		vm.blocked = append(vm.blocked, blockedVM{
			aggregate: termtext.Sanitize(b.AggregateType) + "/" + termtext.Sanitize(b.AggregateID),
			waiting:   b.Waiting,
			blocker:   newRow(b.Blocker),
		})
	}
	switch {
	case s.Blocked.AllRanked():
	case s.Blocked.Ranked == 0:
		vm.blockedRank = "most found, not ranked"
	default:
		vm.blockedRank = fmt.Sprintf("first %d ranked", s.Blocked.Ranked)
	}
	for _, g := range s.FailedByError {
		vm.failedByError = append(vm.failedByError, inspect.Group{Key: termtext.Sanitize(g.Key), Count: g.Count})
		vm.errorKeys = append(vm.errorKeys, g.Key)
	}
	for _, t := range s.ByEventType {
		vm.types = append(vm.types, typeVM{name: termtext.Sanitize(t.EventType), raw: t.EventType,
			ready: t.Ready, scheduled: t.Scheduled, leased: t.Leased, failed: t.Failed,
			oldest: t.OldestPendingAge.Duration(), pending: t.Ready+t.Scheduled > 0})
	}
	vm.attempts = slices.Clone(s.Attempts)
	for _, c := range s.Inbox {
		c.Name = termtext.Sanitize(c.Name)
		vm.inbox = append(vm.inbox, c)
	}
	for i := range vm.tables {
		vm.tables[i].Table = termtext.Sanitize(vm.tables[i].Table)
	}
	if x := s.Health.OldestXmin; x != nil {
		c := *x
		c.Name, c.State, c.Query = termtext.Sanitize(c.Name), termtext.Sanitize(c.State), termtext.Sanitize(c.Query)
		vm.xmin = &c
	}
	vm.horizon = newHorizonVM(s.Health.Horizon)
	if relay != nil {
		st := relay.Status()
		st.LastError = termtext.Sanitize(st.LastError)
		st.MissingTopics = slices.Clone(st.MissingTopics)
		for i := range st.MissingTopics {
			st.MissingTopics[i].Topic = termtext.Sanitize(st.MissingTopics[i].Topic)
		}
		vm.relay = &st
	}
	for _, e := range extras {
		if e.State != nil {
			vm.extras = append(vm.extras, termtext.Sanitize(e.Key.Help().Desc)+": "+termtext.Sanitize(e.State()))
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

// rate is events per second, to one decimal.
func rate(r float64) string { return fmt.Sprintf("%.1f/s", r) }

// overviewTop is the number of lines the counts and the relay take at the top of
// the Overview, whatever the data: the sections below start on the same line in a
// quiet hour and in an incident, so the keys to reach them do not change.
const overviewTop = 11

// viewOverview draws the Overview in w×h.
func (m *Model) viewOverview(w, h int) string {
	if !m.loaded {
		return m.viewNotRead(w)
	}
	vm, st, now := m.overview, m.styles, m.now()
	since := vm.since(now)
	colW := w / 2
	kv := func(k, v string) string { return fmt.Sprintf("%-14s %s", k, v) }
	c, b := vm.counts, vm.counts.Bounds

	left := []string{st.section.Render("OUTBOX")}
	left = append(left, kv("ready", b.Ready.Format(c.Ready)))
	lag := "-"
	if c.Publishable > 0 || vm.oldestPublishable > 0 {
		lag = age(vm.oldestPublishable + since)
		if vm.publishableApprox {
			lag = "≥" + lag
		}
	}
	left = append(left, kv(" publishable", b.Publishable.Format(c.Publishable)+" · lag "+lag))
	waiting := b.Waiting.Format(c.Waiting)
	if c.Waiting > 0 {
		waiting = st.warn.Render(waiting)
	}
	left = append(left, kv(" waiting", waiting+" behind blockers"))
	sched := b.Scheduled.Format(c.Scheduled)
	if vm.nextScheduled != nil {
		sched += " · next in " + inspect.Until(*vm.nextScheduled, now)
	}
	leased := b.Leased.Format(c.Leased)
	if vm.expiredLeases > 0 {
		leased += " · " + st.warn.Render(b.ExpiredLeases.Format(vm.expiredLeases)+" expired")
	}
	left = append(left,
		kv("scheduled", sched),
		kv("leased", leased),
		kv("failed", failedText(b.Failed.Format(c.Failed), c.Failed, st)),
	)
	if c.Pending > 0 {
		// "≥": older rows may lie past the rows the snapshot read.
		left = append(left, kv("oldest pending", vm.oldestPendingBound.Mark()+age(vm.oldestPending+since)))
	} else {
		left = append(left, kv("oldest pending", "-"))
	}
	p := vm.published
	pub := "1m " + p.Last1m.String() + " · 5m " + p.Last5m.String()
	if long := pub + " · 1h " + p.Last1h.String(); ansi.StringWidth(kv("", long)) < colW {
		pub = long
	}
	left = append(left, kv("published", pub))
	tr := m.trend
	in := st.dim.Render("measuring…")
	if r, ok := tr.incoming(); ok {
		in = rate(r)
	}
	out := rate(p.CurrentPerSecond)
	if p.Last10sBound != inspect.Exact {
		out = p.Last10sBound.Mark() + out // more published in 10 s than the snapshot counts
	}
	rates := kv("rate out · in", out+" · "+in)
	// The published rate of the last refreshes, in the room the line leaves.
	if room := colW - 2 - ansi.StringWidth(rates); room >= 4 {
		rates += " " + sparkline(tr.currents(), room)
	}
	left = append(left, rates, kv("backlog", m.backlogText(st)))

	// The RELAY column's lines, each ranked by what it gives way to: when the
	// column is taller than the OUTBOX one (its height is fixed, whatever the
	// terminal's), the lowest ranks go first, and the extras (a demo's fault
	// switches and what they did) never do.
	var col rightColumn
	col.add(rankTitle, st.section.Render("RELAY"))
	if r := vm.relay; r == nil {
		col.add(rankTitle, kv("state", "none in this process"))
	} else {
		state := st.good.Render("running") + fmt.Sprintf(" · %d in flight", r.InFlight)
		if r.Paused {
			state = st.paused.Render(" PAUSED ") + " (p resumes)"
		}
		broker := st.good.Render("reachable")
		if !r.BrokerReachable {
			broker = st.bad.Render("UNREACHABLE")
		}
		col.add(rankTitle, kv("state", state), kv("broker", broker))
		col.add(rankFigures,
			kv("last batch", fmt.Sprintf("%d ev %s · claim %s", r.LastBatch, ms(r.LastPublish), ms(r.LastClaim))),
			kv("published", fmt.Sprintf("%s · fail %s · retry %s", compact(inspect.Count{Value: int64(r.Published)}),
				compact(inspect.Count{Value: int64(r.Failed)}), compact(inspect.Count{Value: int64(r.Retried)}))),
		)
		// Shown only when they happened: batches given back (an outage, a
		// missing topic, shutdown) and marks that lost their lease.
		if r.Released > 0 || r.LostFences > 0 {
			col.add(rankReleased, kv("released", fmt.Sprintf("%s · lost fences %s",
				compact(inspect.Count{Value: int64(r.Released)}), compact(inspect.Count{Value: int64(r.LostFences)}))))
		}
		if r.HeadsLocked > 0 {
			col.add(rankWarning, st.warn.Render(fmt.Sprintf("%d heads held locked by another session", r.HeadsLocked)))
		}
		// The error's text gets the lines the column has left after the
		// extras and the relays line: one at least, three at most.
		wrap := min(max(overviewTop-col.len()-2-len(vm.extras), 1), 3)
		errorLines := func(label string, text []string) {
			col.add(rankErrorLabel, label)
			for k, l := range text {
				rank := rankErrorMore
				if k == 0 {
					rank = rankErrorFirst
				}
				col.add(rank, l)
			}
		}
		switch {
		case r.LastError == "":
			col.add(rankErrorLabel, kv("last error", "-"))
		case m.errorResolved():
			errorLines(kv("last error", st.dim.Render(age(now.Sub(r.LastErrorAt))+" ago, since resolved")),
				wrapLines(r.LastError, w-colW-2, wrap, st.dim))
		default:
			errorLines(kv("last error", st.bad.Render(age(now.Sub(r.LastErrorAt))+" ago")),
				wrapLines(r.LastError, w-colW-2, wrap, st.bad))
		}
	}
	for _, e := range vm.extras {
		col.add(rankExtra, st.warn.Render(e))
	}
	// Shown only when there are any: aggregates whose seq order, the order
	// they are published in, may not be their commit order (status lists
	// them).
	if o := vm.order; o.Unserialized > 0 {
		// An estimate (an upper bound), marked ~ as the console marks them.
		n := compact(inspect.Count{Value: o.Unserialized, Bound: o.Bound, Estimate: true})
		col.add(rankWarning, kv("unserialized", st.warn.Render(n+" aggregates")))
	}
	// Inserts held up behind a writer of their aggregate that stays open
	// (status names the holders).
	if o := vm.order; o.Waiting > 0 {
		held := fmt.Sprintf("%d inserts wait", o.Waiting)
		if len(o.Holders) > 0 {
			held = fmt.Sprintf("%d wait on pid %d %s", o.Waiting, o.Holders[0].PID, age(o.Holders[0].Open.Duration()))
		}
		col.add(rankWarning, kv("order lock", st.warn.Render(held)))
	}
	// Every relay process the outbox knows of (heartbeats, lease holders), then
	// as many of them as fit beside the OUTBOX column: the list never pushes the
	// incident sections down.
	col.add(rankRelaysSeen, kv("relays seen", m.relaysSummary()))
	col.add(rankRelayList, m.relayLines(len(left)-col.len(), w-colW, since)...)
	right := col.fit(len(left), func(cut int) string {
		return st.dim.Render(fmt.Sprintf("… %d more lines", cut))
	})

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
	// A held horizon takes the blank line above the sections, so they start
	// where they always do (or, with no blank line left, the line is added).
	if hl := m.horizonLine(w, since); hl != "" {
		if len(below) > 0 && below[0] == "" {
			below[0] = hl
		} else {
			lines = append(lines, hl)
		}
	}
	return clip(append(lines, below...), w, h)
}

// backlogText says where the backlog (ready, scheduled and leased events) is
// going. "drains in" is a forecast only when the trend measured both a shrinking
// backlog and events being published over its window, and when nothing of the
// backlog waits behind a blocker (those go only when an operator acts): a backlog
// that shrinks because events were parked or skipped does not drain by itself.
func (m *Model) backlogText(st styles) string {
	c, tr := m.overview.counts, m.trend
	if c.Ready+c.Scheduled+c.Leased == 0 {
		return "empty"
	}
	r, ok := tr.backlogRate()
	if !ok {
		return st.dim.Render("measuring…")
	}
	publishing := tr.publishing()
	switch d, drains := tr.drain(); {
	case !publishing && r > 0:
		return st.bad.Render("not draining") + " · +" + rate(r)
	case !publishing:
		return st.bad.Render("not draining")
	case drains && c.Waiting > 0:
		return st.good.Render("shrinking") + " · " + st.warn.Render(c.Bounds.Waiting.Format(c.Waiting)+" stuck")
	case drains:
		return st.good.Render("drains in ~" + age(d))
	case r > 0:
		return st.warn.Render("growing") + " +" + rate(r)
	}
	return "steady"
}

// overviewSections lays out the Overview's lower half in room lines: the pane's
// sections first (by default the blocked aggregates and the error groups, what an
// incident is about), each with a fixed minimum of lines, then, in the room they
// leave, the breakdowns and the tables. It returns the lines and the targets they
// show, in order.
func (m *Model) overviewSections(w, room int, on func(overviewTarget) bool) ([]string, []overviewTarget) {
	vm, st, now := m.overview, m.styles, m.now()
	var blocked, failed, tables []string
	for i, b := range vm.blocked {
		// How long it has blocked: a failed blocker since it failed; a scheduled
		// one until its next attempt.
		state := string(b.blocker.state)
		switch {
		case b.blocker.failedAt != nil:
			state += " " + inspect.Ago(*b.blocker.failedAt, now)
		case b.blocker.state == wire.Scheduled && b.blocker.availableAt.After(now):
			state = "retry in " + inspect.Until(b.blocker.availableAt, now)
		}
		s := fmt.Sprintf("%-18s %4s waiting behind %s %s", b.aggregate, compact(inspect.Count{Value: b.waiting}), b.blocker.short, state)
		if b.blocker.lastError != "" {
			s += ": " + b.blocker.lastError
		}
		blocked = append(blocked, cursorLine(s, on(overviewTarget{targetBlocked, i}), w, st))
	}
	if len(blocked) == 0 {
		blocked = []string{st.dim.Render("  none")}
	}
	for i, g := range vm.failedByError {
		failed = append(failed, cursorLine(fmt.Sprintf("%5s  %s", compact(inspect.Count{Value: g.Count}), g.Key), on(overviewTarget{targetError, i}), w, st))
	}
	if len(failed) == 0 {
		failed = []string{st.dim.Render("  none")}
	}
	failedTitle := "FAILED BY ERROR"
	if vm.failedGroupsOf > 0 {
		// Counts of the newest failures, never shown as totals.
		failedTitle += fmt.Sprintf(" (in the newest %d only)", vm.failedGroupsOf)
	}
	for _, t := range vm.tables {
		tables = append(tables, fmt.Sprintf("  %-22s live %-8d dead %-8d %s + idx %s",
			t.Table, t.LiveTuples, t.DeadTuples, size(t.TableBytes), size(t.IndexBytes)))
	}
	if x := vm.xmin; x != nil {
		tables = append(tables, st.warn.Render(fmt.Sprintf("  vacuum held back %s by %s %s (%s)", age(x.Age.Duration()), x.Kind, x.Name, x.State)))
	}
	blockedTitle := "BLOCKED AGGREGATES (" + vm.blockedBound.Format(vm.blockedCount) + ")"
	if vm.blockedRank != "" {
		// Lines past the ranked ones are the most harmful found, not of all.
		blockedTitle += " · " + vm.blockedRank
	}
	blockedSec := section{title: blockedTitle, body: blocked,
		total: vm.blockedCount, bound: vm.blockedBound, min: 3, kind: targetBlocked, targets: len(vm.blocked)}
	failedSec := section{title: failedTitle, body: failed, min: 2, kind: targetError, targets: len(vm.failedByError)}
	typesSec, attempts := m.breakdownLines(w, on)
	typesSec.kind, typesSec.targets = targetType, len(vm.types)
	tablesSec := section{title: "TABLES", body: tables, kind: -1}

	// The pane's own sections first, each given its minimum; what room they
	// leave goes to the others (the attempts line before them).
	var lines []string
	var first, then []section
	switch m.pane {
	case paneIncident:
		first, then = []section{blockedSec, failedSec}, []section{typesSec, tablesSec}
	case paneTypes:
		// The attempts line heads the types.
		typesSec.min, typesSec.head = 3, attempts[1:]
		first, then, attempts = []section{typesSec}, []section{failedSec}, nil
	case paneErrors:
		failedSec.min = 3
		first, then = []section{failedSec}, []section{typesSec, tablesSec}
	}
	more, shownFirst := layoutSections(room, st, true, first...)
	lines = append(lines, more...)
	var shownThen []int
	if rest := room - len(more); rest > len(attempts) {
		more, shownThen = layoutSections(rest-len(attempts), st, false, then...)
		if len(more) > 0 {
			lines = append(append(lines, attempts...), more...)
		}
	}
	var shown []overviewTarget
	add := func(ss []section, n []int) {
		for i, c := range n {
			if ss[i].kind >= 0 {
				for j := range min(c, ss[i].targets) {
					shown = append(shown, overviewTarget{ss[i].kind, j})
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
	// head are lines between the blank line and the title (the attempts line
	// that heads the types).
	head []string
	body []string
	// total, when set, is how many items the body's lines stand for (the body may
	// hold only the first few): "… N more" counts from it.
	total int64
	bound inspect.Bound
	// min is the number of body lines the section keeps however full the
	// Overview is (0: the section is shown only when two fit).
	min int
	// kind is what the body's first targets lines stand for (-1: none).
	kind    targetKind
	targets int
}

// layoutSections lays out titled sections in room lines, in priority order, and
// says how many body lines of each show. A section cut short ends in "… N more".
// fixed: one blank line leads (when it fits) and the titles part the sections;
// each keeps its minimum, and a section that still finds no room shows as its
// title with "(hidden: resize)" — a section never vanishes without a word.
// Otherwise each section has its blank line, and trailing sections that cannot
// show two lines are left out.
func layoutSections(room int, st styles, fixed bool, ss ...section) ([]string, []int) {
	want := func(s section) int {
		if fixed {
			return max(min(len(s.body), s.min), 1)
		}
		return min(len(s.body), 2)
	}
	// gaps[i] is the blank line before section i.
	gaps := make([]int, len(ss))
	for i := range gaps {
		if !fixed || i == 0 {
			gaps[i] = 1
		}
	}
	need := func(from, to int) int {
		n := 0
		for i := from; i < to; i++ {
			n += gaps[i] + 1 + len(ss[i].head) + want(ss[i])
		}
		return n
	}
	if fixed && len(ss) > 0 && need(0, len(ss)) > room {
		gaps[0] = 0
	}
	keep, hidden := len(ss), 0
	for keep > 0 && need(0, keep)+hidden > room {
		keep--
		if fixed {
			hidden++ // its title stays, saying it is hidden
		}
	}
	if !fixed {
		ss = ss[:keep]
	}
	shown := make([]int, len(ss))
	var lines []string
	left := room
	for i, s := range ss {
		if i >= keep {
			// fixed, and not even the title and one line fit.
			if left > 0 {
				lines = append(lines, st.section.Render(s.title)+st.dim.Render(" (hidden: resize)"))
				left--
			}
			continue
		}
		if gaps[i] > 0 {
			lines = append(lines, "")
		}
		lines = append(lines, s.head...)
		lines = append(lines, st.section.Render(s.title))
		avail := left - gaps[i] - 1 - len(s.head) - need(i+1, keep) - hidden
		body := s.body
		total := max(s.total, int64(len(body)))
		n := len(body)
		switch {
		case len(body) > avail:
			n = max(avail-1, 0)
			body = append(body[:n:n], st.dim.Render("  … "+s.bound.Format(total-int64(n))+" more"))
		case total > int64(len(body)) && len(body) < avail:
			body = append(body[:n:n], st.dim.Render("  … "+s.bound.Format(total-int64(n))+" more"))
		case total > int64(len(body)) && len(body) > 0:
			n = len(body) - 1
			body = append(body[:n:n], st.dim.Render("  … "+s.bound.Format(total-int64(n))+" more"))
		}
		shown[i] = n
		lines = append(lines, body...)
		left -= gaps[i] + 1 + len(s.head) + len(body)
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
	if n <= 0 {
		return nil
	}
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

// missingTopics are the Kafka topics that do not exist while events wait for
// them: as the embedded relay knows them, else as the rows' errors say.
func (m *Model) missingTopics() []MissingTopic {
	if r := m.overview.relay; r != nil && len(r.MissingTopics) > 0 {
		return r.MissingTopics
	}
	return m.overview.missingTopics
}

// viewNotRead is the overview before the first read of the outbox completes
// (seconds on a large table under load): no figure at all, since a zero would
// say "nothing ready, nothing failed, no blocker", which is not known yet.
func (m *Model) viewNotRead(w int) string {
	st := m.styles
	lines := []string{st.section.Render("OUTBOX")}
	if m.loadErr != nil {
		lines = append(lines, st.bad.Render(fit("not read: "+dbErrorText(m.loadErr), w, false)),
			fit("nothing is known about the outbox until a read succeeds; it is tried again every "+m.refresh.String(), w, false))
	} else {
		reading := "reading the outbox…"
		if !m.loadStarted.IsZero() {
			reading += fmt.Sprintf(" (the first read, %s so far)", age(m.now().Sub(m.loadStarted)))
		}
		lines = append(lines, fit(reading, w, false),
			fit("no figure is shown until it completes: none is known yet", w, false))
	}
	return strings.Join(lines, "\n")
}

// The ranks of the RELAY column's lines (rightColumn): when the column is
// too tall, the lowest go first.
const (
	rankRelayList = iota + 1
	rankRelaysSeen
	rankErrorMore
	rankReleased
	rankFigures
	rankWarning
	rankErrorFirst
	rankErrorLabel
	rankTitle
	rankExtra
)

// rightColumn is the Overview's RELAY column, its lines ranked.
type rightColumn struct {
	lines []string
	ranks []int
}

func (c *rightColumn) add(rank int, lines ...string) {
	for _, l := range lines {
		c.lines, c.ranks = append(c.lines, l), append(c.ranks, rank)
	}
}

func (c *rightColumn) len() int { return len(c.lines) }

// fit returns the column in at most h lines: as it is when it fits, else
// without its lowest-ranked lines (the last of a rank first) and ending in
// marker(n), n the lines left out. A line ranked rankExtra is never left
// out while h has room for it.
func (c *rightColumn) fit(h int, marker func(int) string) []string {
	if len(c.lines) <= h {
		return c.lines
	}
	drop := make([]bool, len(c.lines))
	cut := 0
	for rank := rankRelayList; rank <= rankExtra && len(c.lines)-cut > h-1; rank++ {
		for k := len(c.lines) - 1; k >= 0 && len(c.lines)-cut > h-1; k-- {
			if c.ranks[k] == rank {
				drop[k], cut = true, cut+1
			}
		}
	}
	var out []string
	for k, l := range c.lines {
		if !drop[k] {
			out = append(out, l)
		}
	}
	return append(out, marker(cut))
}
