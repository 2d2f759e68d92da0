package console

import (
	"context"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/outboxtop/outboxtop/internal/inspect"
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
		var after string
		for len(msg.rows) < req.want {
			page, err := in.List(ctx, inspect.ListOptions{
				State: req.list.state, Filter: req.filter.filter, Sort: req.sort, Desc: req.desc,
				Limit: min(req.want-len(msg.rows), 1000), After: after,
			})
			if err != nil {
				msg.err = err
				return msg
			}
			for _, e := range page.Events {
				msg.rows = append(msg.rows, newRow(e))
			}
			after, msg.more = page.Next, page.Next != ""
			if after == "" {
				break
			}
		}
		msg.total, err = in.CountMatching(ctx, req.list.state, req.filter.filter)
		if err != nil {
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

// query is a parsed filter: "type:", "agg:", "aggtype:", "id:" and "err:" terms
// and bare words (each must appear in the event type, aggregate, event id or last
// error) all go to the database (inspect.Filter), so they search every event, not
// only the loaded ones.
type query struct {
	text   string
	filter inspect.Filter
}

func parseQuery(s string) (query, error) {
	q := query{text: strings.TrimSpace(s)}
	fields, err := queryFields(s)
	if err != nil {
		return q, err
	}
	for _, f := range fields {
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
				q.filter.IDPart = strings.ToLower(v)
				continue
			case "err":
				q.filter.ErrorContains = v
				continue
			}
		}
		q.filter.Words = append(q.filter.Words, f)
	}
	return q, q.filter.Validate()
}

// queryFields splits a filter at spaces; a term's value (or a bare word) in Go
// quotes, as the Overview's jumps write them (err:"broker not available"), is one
// field, unquoted.
func queryFields(s string) ([]string, error) {
	var out []string
	for s = strings.TrimLeft(s, " \t"); s != ""; s = strings.TrimLeft(s, " \t") {
		k, rest, _ := strings.Cut(s, ":")
		prefix, quoted := "", s
		if !strings.HasPrefix(s, `"`) && strings.HasPrefix(rest, `"`) && !strings.ContainsAny(k, " \t") {
			prefix, quoted = k+":", rest
		}
		if strings.HasPrefix(quoted, `"`) {
			if lit, err := strconv.QuotedPrefix(quoted); err == nil {
				v, _ := strconv.Unquote(lit)
				out = append(out, prefix+v)
				s = quoted[len(lit):]
				continue
			}
			return nil, fmt.Errorf("unterminated quote in %q", s)
		}
		end := strings.IndexAny(s, " \t")
		if end < 0 {
			end = len(s)
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out, nil
}
