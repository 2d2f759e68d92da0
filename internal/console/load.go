package console

import (
	"context"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// loadRequest is what one load reads: the Overview's snapshot always (the tabs
// show its counts), plus the rows of the list view on screen.
type loadRequest struct {
	view   viewID
	list   *listView
	filter query
	sort   inspect.Sort
	desc   bool
	want   int // rows to load: pages of up to 1000 are read until there are this many
}

// loadedMsg is a finished load. Everything in it is already sanitized.
type loadedMsg struct {
	req      loadRequest
	overview overviewVM
	rows     []row
	more     bool          // the list had more rows than were loaded
	total    inspect.Count // the rows matching the view's state and filter
	err      error
	took     time.Duration
	// scan: the list's search inside payloads or headers read without an
	// index, nil otherwise; Stopped when it stopped at its budget.
	scan *inspect.Scan
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
		req.list, req.filter, req.sort, req.desc, req.want = lv, m.filters[m.view], t.sort, t.desc, max(t.want, m.opts.Limit)
	}
	in, snaps, relay, extras, ctx, limit, now := m.opts.Inspector, m.opts.Snapshots, m.opts.Relay, m.opts.Extras, m.opts.Context, m.opts.Limit, m.opts.Now
	missing := m.opts.MissingTopics
	return tea.Batch(func() tea.Msg { return load(ctx, in, snaps, relay, extras, missing, limit, now, req) }, m.startLagLoad())
}

func load(ctx context.Context, in *inspect.Inspector, snaps SnapshotSource, relay Relay, extras []Extra,
	missing func(context.Context) ([]MissingTopic, error), limit int, now func() time.Time, req loadRequest) loadedMsg {
	start := now()
	msg := loadedMsg{req: req}
	snap, err := snaps.Snapshot(ctx)
	if err != nil {
		msg.err = err
		return msg
	}
	msg.overview = newOverviewVM(snap, relay, extras)
	if missing != nil {
		// A failed read only leaves the banner out: the snapshot stands.
		if topics, err := missing(ctx); err == nil {
			for _, t := range topics {
				t.Topic = termtext.Sanitize(t.Topic)
				msg.overview.missingTopics = append(msg.overview.missingTopics, t)
			}
		}
	}
	if req.list != nil {
		// Keyset pages (ties broken by seq), read until the rows wanted are loaded.
		// A search inside payloads or headers that no index serves reads at most
		// its budget of rows (searchBudget) and stops there, saying so.
		var after string
		budget := searchBudget(req.filter.filter, req.want, limit)
		for len(msg.rows) < req.want {
			o := inspect.ListOptions{
				State: req.list.state, Filter: req.filter.filter, Sort: req.sort, Desc: req.desc,
				Limit: min(req.want-len(msg.rows), 1000), After: after,
			}
			if msg.scan != nil {
				o.MaxScan = budget - int(msg.scan.Scanned)
			} else {
				o.MaxScan = budget
			}
			page, err := in.List(ctx, o)
			if err != nil {
				msg.err = err
				return msg
			}
			for _, e := range page.Events {
				msg.rows = append(msg.rows, newRow(e))
			}
			after, msg.more = page.Next, page.Next != ""
			if page.Scan != nil {
				if msg.scan == nil {
					msg.scan = &inspect.Scan{}
				}
				msg.scan.Scanned += page.Scan.Scanned
				msg.scan.Stopped = page.Scan.Stopped || msg.scan.Scanned >= int64(budget) && page.Next != ""
			}
			if after == "" || msg.scan != nil && msg.scan.Stopped {
				break
			}
		}
		if err := markWaiting(ctx, in, msg.rows); err != nil {
			msg.err = err
			return msg
		}
		if msg.scan != nil && msg.scan.Stopped {
			// Counting would read the same rows again: the search found these.
			msg.total = inspect.Count{Value: int64(len(msg.rows)), Bound: inspect.LowerBound}
		} else if msg.total, err = in.CountMatching(ctx, req.list.state, req.filter.filter); err != nil {
			msg.err = err
			return msg
		}
		if !msg.total.Estimate || msg.total.Value < int64(len(msg.rows)) {
			msg.total.Value = max(msg.total.Value, int64(len(msg.rows)))
		}
	}
	msg.took = now().Sub(start)
	return msg
}

// markWaiting sets, on each ready row that waits behind its aggregate's failed
// or scheduled head, the head's seq: ready by its own available_at, it is not
// published before that head is, and is shown as waiting, not "ready now".
func markWaiting(ctx context.Context, in *inspect.Inspector, rows []row) error {
	var ids []string
	for _, r := range rows {
		if r.state == wire.Ready {
			ids = append(ids, r.id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	heads, err := in.WaitingBehind(ctx, ids)
	if err != nil {
		return err
	}
	for i := range rows {
		if h, ok := heads[rows[i].id]; ok {
			rows[i].behind = h.Seq
		}
	}
	return nil
}
