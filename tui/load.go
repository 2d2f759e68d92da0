package tui

import (
	"context"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/outboxtop/outboxtop/inspect"
)

// loadRequest is what one load reads: the Overview's snapshot always (the tabs
// show its counts), plus the rows of the list view on screen.
type loadRequest struct {
	view   viewID
	list   *listView
	filter query
	sort   inspect.Sort
	desc   bool
}

// loadedMsg is a finished load. Everything in it is already sanitized.
type loadedMsg struct {
	req      loadRequest
	overview overviewVM
	rows     []row
	more     bool // the list had more rows than the limit
	err      error
	took     time.Duration
}

// tickMsg drives refreshes and the clock of countdowns.
type tickMsg struct{ gen int }

func (m *Model) tick() tea.Cmd {
	gen := m.tickGen
	d := min(m.refresh, time.Second)
	return tea.Tick(d, func(time.Time) tea.Msg { return tickMsg{gen: gen} })
}

// startLoad returns the load command, or nil when one is running: loads never
// overlap. A load asked for meanwhile runs when the current one finishes.
func (m *Model) startLoad() tea.Cmd {
	if m.loading {
		m.reloadWanted = true
		return nil
	}
	m.loading = true
	m.reloadWanted = false
	m.loadStarted = m.now()
	req := loadRequest{view: m.view}
	if lv := listViews[m.view]; lv != nil {
		t := m.tables[m.view]
		req.list, req.filter, req.sort, req.desc = lv, m.filters[m.view], t.sort, t.desc
	}
	in, relay, extras, ctx, limit, now := m.opts.Inspector, m.opts.Relay, m.opts.Extras, m.opts.Context, m.opts.Limit, m.opts.Now
	return func() tea.Msg { return load(ctx, in, relay, extras, limit, now, req) }
}

func load(ctx context.Context, in *inspect.Inspector, relay Relay, extras []Extra, limit int, now func() time.Time, req loadRequest) loadedMsg {
	start := now()
	msg := loadedMsg{req: req}
	snap, err := in.Snapshot(ctx)
	if err != nil {
		msg.err = err
		return msg
	}
	msg.overview = newOverviewVM(snap, relay, extras)
	if req.list != nil {
		page, err := in.List(ctx, inspect.ListOptions{
			State: req.list.state, Filter: req.filter.filter, Sort: req.sort, Desc: req.desc, Limit: limit,
		})
		if err != nil {
			msg.err = err
			return msg
		}
		msg.more = page.Next != ""
		for _, e := range page.Events {
			r := newRow(e)
			if req.filter.matches(r) {
				msg.rows = append(msg.rows, r)
			}
		}
	}
	msg.took = now().Sub(start)
	return msg
}

// query is a parsed filter: "type:", "agg:", "aggtype:", "id:" and "err:" terms
// go to the database (inspect.Filter); bare words must each appear in the event
// type, aggregate, event id or last error of a listed row.
type query struct {
	text   string
	filter inspect.Filter
	words  []string
}

func parseQuery(s string) (query, error) {
	q := query{text: strings.TrimSpace(s)}
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, ":")
		if ok && v != "" {
			switch strings.ToLower(k) {
			case "type":
				q.filter.EventType = v
				continue
			case "agg":
				q.filter.AggregateID = v
				continue
			case "aggtype":
				q.filter.AggregateType = v
				continue
			case "id":
				q.filter.IDPrefix = strings.ToLower(v)
				continue
			case "err":
				q.filter.ErrorContains = v
				continue
			}
		}
		q.words = append(q.words, strings.ToLower(f))
	}
	return q, q.filter.Validate()
}

func (q query) matches(r row) bool {
	for _, w := range q.words {
		if !strings.Contains(strings.ToLower(r.eventType), w) &&
			!strings.Contains(strings.ToLower(r.aggregate), w) &&
			!strings.HasPrefix(r.id, w) &&
			!strings.Contains(strings.ToLower(r.lastError), w) {
			return false
		}
	}
	return true
}
