package console

import (
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"sort"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/outboxtop/outboxtop/internal/consumerlag"
	"github.com/outboxtop/outboxtop/internal/inspect"
)

// ConsumerLag is where the console reads the consumer groups' lag on the outbox's
// topics: a *consumerlag.Cache, which asks the brokers at most once per its
// interval however many consoles read it. Report may block while a check runs;
// the console calls it off the UI loop, only while the Consumers view is open.
type ConsumerLag interface {
	Report() consumerlag.Report
}

// lagLoadedMsg is a finished read of the consumer lag, already sanitized.
type lagLoadedMsg struct{ report consumerlag.Report }

// consumersState is the Consumers view's Kafka side.
type consumersState struct {
	loading, loaded bool
	report          consumerlag.Report
}

// startLagLoad reads the lag when the Consumers view is open and no read is
// running (a slow cluster must not pile reads up behind the cache's lock).
func (m *Model) startLagLoad() tea.Cmd {
	if m.view != viewInbox || m.opts.Consumers == nil || m.consumers.loading {
		return nil
	}
	m.consumers.loading = true
	src := m.opts.Consumers
	return func() tea.Msg { return lagLoadedMsg{sanitizeReport(src.Report())} }
}

func (m *Model) onLagLoaded(msg lagLoadedMsg) {
	m.consumers = consumersState{loaded: true, report: msg.report}
}

// sanitizeReport makes the broker's text (group, topic and error names) safe to
// draw, once, where it enters the view model.
func sanitizeReport(r consumerlag.Report) consumerlag.Report {
	groups := make([]consumerlag.Group, len(r.Groups))
	for i, g := range r.Groups {
		g.Name, g.State, g.Error = termtext.Sanitize(g.Name), termtext.Sanitize(g.State), termtext.Sanitize(g.Error)
		topics := make([]consumerlag.Topic, len(g.Topics))
		for j, t := range g.Topics {
			t.Topic, t.Partitions = termtext.Sanitize(t.Topic), nil // the view shows topics, not partitions
			topics[j] = t
		}
		g.Topics = topics
		groups[i] = g
	}
	r.Groups = groups
	r.Errors = append([]string(nil), r.Errors...)
	for i, e := range r.Errors {
		r.Errors[i] = termtext.Sanitize(e)
	}
	r.AgeError = termtext.Sanitize(r.AgeError)
	r.Topics = nil
	return r
}

// viewInbox draws the Consumers view: each consumer's inbox (consumed_event) and
// its Kafka consumer group's lag on one line when the names are the same, which
// is how an inbox consumer usually names its group; the others on lines of their
// own. A group on several of the outbox's topics has a line per topic below it.
func (m *Model) viewInbox(w, h int) string {
	st, now := m.styles, m.now()
	type line struct {
		name  string
		inbox bool
		total string
		last5 string
		last  string
		group *consumerlag.Group
	}
	byName := map[string]*line{}
	var lines []*line
	for _, c := range m.overview.inbox {
		last := "-"
		if c.LastConsumedAt != nil {
			last = inspect.Ago(*c.LastConsumedAt, now) + " ago"
		}
		l := &line{name: c.Name, inbox: true, total: c.Total.String(), last5: fmt.Sprint(c.Last5m), last: last}
		byName[c.Name] = l
		lines = append(lines, l)
	}
	r := m.consumers.report
	for i := range r.Groups {
		g := &r.Groups[i]
		if l := byName[g.Name]; l != nil {
			l.group = g
			continue
		}
		lines = append(lines, &line{name: g.Name, total: "-", last5: "-", last: "-", group: g})
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].name < lines[j].name })

	nameW := max(w-60, 16)
	row := func(name, total, last5, last, state, lag, oldest string) string {
		return fmt.Sprintf("%-*s %10s %8s %10s  %-9s %9s %7s", nameW, fit(name, nameW, false), total, last5, last, fit(state, 9, false), lag, oldest)
	}
	out := []string{
		st.dim.Render(fit(fmt.Sprintf("%-*s %30s  %s", nameW, "", "inbox (consumed_event)", "Kafka consumer group"), w, false)),
		st.header.Render(fit(row("CONSUMER", "CONSUMED", "LAST 5M", "LAST", "STATE", "LAG", "OLDEST"), w, false)),
	}
	if len(lines) == 0 {
		out = append(out, st.dim.Render("  no consumer has an inbox here (consumed_event is empty) and no group reads the outbox's topics"))
	}
	var refused []string
	for _, l := range lines {
		state, lag, oldest := "-", "-", "-"
		if g := l.group; g != nil {
			switch {
			case g.Error != "":
				state = "refused"
				refused = append(refused, g.Name+": "+g.Error)
			default:
				state, lag, oldest = g.State, fmt.Sprint(g.Lag), ageOf(g.OldestAge)
			}
		}
		text := row(l.name, l.total, l.last5, l.last, state, lag, oldest)
		if l.group != nil && l.group.Lag > 0 {
			text = st.warn.Render(fit(text, w, false))
		}
		out = append(out, text)
		if g := l.group; g != nil && len(g.Topics) > 1 {
			for _, t := range g.Topics {
				out = append(out, st.dim.Render(fit(row("  "+t.Topic, "", "", "", "", fmt.Sprint(t.Lag), ageOf(t.OldestAge)), w, false)))
			}
		}
	}
	out = append(out, "")
	switch {
	case m.opts.Consumers == nil:
		out = append(out, st.dim.Render(fit("  Kafka lag not checked: no brokers given (--brokers or KAFKA_BROKERS)", w, false)))
	case !m.consumers.loaded:
		out = append(out, st.dim.Render(fit("  checking the consumer groups' lag…", w, false)))
	default:
		out = append(out, st.dim.Render(fit(fmt.Sprintf("  lag on the outbox's topics, checked %s ago · OLDEST: oldest unconsumed record",
			age(max(now.Sub(r.TakenAt), 0))), w, false)))
	}
	for _, e := range append(refused, r.Errors...) {
		out = append(out, st.warn.Render(fit("  "+e, w, false)))
	}
	if r.AgeError != "" {
		out = append(out, st.dim.Render(fit("  "+r.AgeError, w, false)))
	}
	return clip(out, w, h)
}

func ageOf(s *consumerlag.Seconds) string {
	if s == nil {
		return "-"
	}
	return age(s.Duration().Round(time.Second))
}

// consumersTabCount is the Consumers tab's number: inboxes and groups, each name once.
func (m *Model) consumersTabCount() int64 {
	names := map[string]bool{}
	for _, c := range m.overview.inbox {
		names[c.Name] = true
	}
	for _, g := range m.consumers.report.Groups {
		names[g.Name] = true
	}
	return int64(len(names))
}
