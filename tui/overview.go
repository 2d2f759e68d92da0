package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/inspect"
)

// overviewVM is a Snapshot (and the relay's status) as the view model holds it:
// text sanitized, nothing else changed.
type overviewVM struct {
	takenAt       time.Time
	counts        inspect.Counts
	expiredLeases int64
	oldestPending time.Duration
	oldestReady   time.Duration
	nextScheduled *time.Time
	published     inspect.PublishedRecent
	blockedCount  int64
	blocked       []blockedVM
	failedByError []inspect.Group
	inbox         []inspect.Consumer
	tables        []inspect.TableHealth
	xmin          *inspect.XminHolder
	relay         *RelayStatus
	extras        []string
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
		tables:        s.Health.Tables,
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
	}
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

// viewOverview draws the Overview in w×h.
func (m *Model) viewOverview(w, h int) string {
	vm, st, now := m.overview, m.styles, m.now()
	since := vm.since(now)
	kv := func(k, v string) string { return fmt.Sprintf("%-15s %s", k, v) }

	left := []string{st.section.Render("OUTBOX")}
	left = append(left,
		kv("ready", fmt.Sprint(vm.counts.Ready)),
		kv("scheduled", fmt.Sprint(vm.counts.Scheduled)),
		kv("leased", fmt.Sprint(vm.counts.Leased)),
		kv("failed", failedText(vm.counts.Failed, st)),
		kv("published", fmt.Sprintf("1m %s · 5m %s · 1h %s", vm.published.Last1m, vm.published.Last5m, vm.published.Last1h)),
	)
	if vm.counts.Pending > 0 {
		left = append(left, kv("oldest pending", age(vm.oldestPending+since)))
	} else {
		left = append(left, kv("oldest pending", "-"))
	}
	if vm.counts.Ready > 0 {
		left = append(left, kv("oldest ready", age(vm.oldestReady+since)))
	}
	if vm.expiredLeases > 0 {
		left = append(left, kv("expired leases", st.warn.Render(fmt.Sprint(vm.expiredLeases))+" (claimable again)"))
	}
	if vm.nextScheduled != nil {
		left = append(left, kv("next scheduled", "in "+age(vm.nextScheduled.Sub(now))))
	}
	left = append(left, kv("throughput", fmt.Sprintf("%s %.1f/s", sparkline(m.rates, 12), vm.published.RatePerSecond)))

	right := []string{st.section.Render("RELAY")}
	if r := vm.relay; r == nil {
		right = append(right, kv("state", "off (--no-relay)"))
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
			kv("totals", fmt.Sprintf("pub %d · fail %d · retry %d", r.Published, r.Failed, r.Retried)),
		)
		if r.LastError != "" {
			right = append(right, kv("last error", age(now.Sub(r.LastErrorAt))+" ago"), "  "+st.bad.Render(r.LastError))
		} else {
			right = append(right, kv("last error", "-"))
		}
	}
	for _, e := range vm.extras {
		right = append(right, st.warn.Render(e))
	}

	colW := w / 2
	lines := joinColumns(left, right, colW, w-colW)

	var blocked, failed, tables []string
	for _, b := range vm.blocked {
		s := fmt.Sprintf("  %-18s %2d waiting behind %s %s", b.aggregate, b.waiting, b.blocker.short, b.blocker.state)
		if b.blocker.lastError != "" {
			s += ": " + b.blocker.lastError
		}
		blocked = append(blocked, s)
	}
	if len(blocked) == 0 {
		blocked = []string{st.dim.Render("  none")}
	}
	for _, g := range vm.failedByError {
		failed = append(failed, fmt.Sprintf("  %5d  %s", g.Count, g.Key))
	}
	for _, t := range vm.tables {
		tables = append(tables, fmt.Sprintf("  %-22s live %-8d dead %-8d %s + idx %s",
			t.Table, t.LiveTuples, t.DeadTuples, size(t.TableBytes), size(t.IndexBytes)))
	}
	if x := vm.xmin; x != nil {
		tables = append(tables, st.warn.Render(fmt.Sprintf("  vacuum held back %s by %s %s (%s)", age(x.Age.Duration()), x.Kind, x.Name, x.State)))
	}
	return clip(append(lines, sections(h-len(lines), st,
		section{fmt.Sprintf("BLOCKED AGGREGATES (%d)", vm.blockedCount), blocked},
		section{"FAILED BY ERROR", failed},
		section{"TABLES", tables},
	)...), w, h)
}

type section struct {
	title string
	body  []string
}

// sections lays out titled sections (a blank line, the title, the body) in room
// lines, in priority order: trailing sections that cannot show one line are left
// out, and a section cut short ends in "… N more".
func sections(room int, st styles, ss ...section) []string {
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
	left := room
	for i := range ss {
		body := ss[i].body
		avail := left - 2 - need(ss[i+1:])
		if len(body) > avail {
			keep := max(avail-1, 0)
			body = append(body[:keep:keep], st.dim.Render(fmt.Sprintf("  … %d more", len(body)-keep)))
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
	return lines
}

func failedText(n int64, st styles) string {
	if n > 0 {
		return st.bad.Render(fmt.Sprint(n))
	}
	return "0"
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

// viewInbox draws the consumers' inboxes.
func (m *Model) viewInbox(w, h int) string {
	st, now := m.styles, m.now()
	lines := []string{st.header.Render(fit(fmt.Sprintf("%-30s %12s %10s %12s", "CONSUMER", "CONSUMED", "LAST 5M", "LAST"), w, false))}
	if len(m.overview.inbox) == 0 {
		lines = append(lines, st.dim.Render("  no consumer has an inbox here (consumed_event is empty)"))
	}
	for _, c := range m.overview.inbox {
		last := "-"
		if c.LastConsumedAt != nil {
			last = age(now.Sub(*c.LastConsumedAt)) + " ago"
		}
		lines = append(lines, fmt.Sprintf("%-30s %12s %10d %12s", fit(c.Name, 30, false), c.Total, c.Last5m, last))
	}
	return clip(lines, w, h)
}
