package inspect

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// PublishedRecent is publishing throughput from published_at, in outbox_event
// (the archive's rows are not counted). Each window is exact unless more than
// publishedWindowCap events fall in it; then it is an estimate (Count.Estimate)
// that holds both of its bounds: never below the rows counted in the window
// (Count.AtLeast), never above the published rows the snapshot counts in the
// table (Counts.Published, itself never below the rows counted), and no window
// above a longer one. Between them it is the newest rows' rate over the part
// of the window that has any history: bursty publishing can put it anywhere
// between the two bounds.
type PublishedRecent struct {
	Last1m Count `json:"last_1m"`
	Last5m Count `json:"last_5m"`
	Last1h Count `json:"last_1h"`
	// Last10s is exact unless more than publishedWindowCap events were
	// published in the last 10 s: then it is the rows counted, a lower bound
	// (Last10sBound).
	Last10s      int64 `json:"last_10s"`
	Last10sBound Bound `json:"last_10s_bound,omitempty"`
	// RatePerSecond is Last1m / 60: it lags a change by a minute.
	RatePerSecond float64 `json:"rate_per_second"`
	// CurrentPerSecond is Last10s / 10 (over the history when it is shorter): it
	// reaches 0 within 10 s of publishing stopping. A lower bound with Last10s.
	CurrentPerSecond float64 `json:"current_per_second"`
}

// pubCaps bound what snapPublished counts one by one: the newest rows of the
// hour read for the windows, and the rows counted for the published and
// archived totals before the planner's estimate stands for them.
type pubCaps struct{ window, total int64 }

func (i *Inspector) pubCaps() pubCaps {
	if i.pub != nil {
		return *i.pub
	}
	return pubCaps{window: publishedWindowCap, total: totalExactCap}
}

// snapPublished: totals capped then estimated; windows from the newest
// pubCaps.window rows of the published_at index (outbox_published_idx), an
// index range read whatever the history.
func (i *Inspector) snapPublished(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	cp := i.pubCaps()
	var err error
	s.Counts.Published, err = countCapped(ctx, tx, i.q.SQL("published_rows"), cp.total)
	if err != nil {
		return err
	}
	s.Counts.Archived, err = countCapped(ctx, tx, i.q.SQL("archived_rows"), cp.total)
	if err != nil {
		return err
	}
	if err := tx.QueryRow(ctx, i.q.SQL("skipped_count")).Scan(&s.Counts.Skipped); err != nil {
		return err
	}
	// The newest rows within the hour, newest first; n < cap means the windows are
	// exact. history is how far back publishing goes at all: a window longer than
	// the history is extrapolated over the history only.
	var n, n10s, n1m, n5m int64
	var span float64
	var history *float64
	err = tx.QueryRow(ctx, i.q.SQL("published_windows"), cp.window).Scan(&n, &n10s, &n1m, &n5m, &span, &history)
	if err != nil {
		return err
	}
	// The rows counted in the hour are in the table: an estimated total is
	// never below them either.
	if s.Counts.Published.Estimate {
		s.Counts.Published.Value = max(s.Counts.Published.Value, n)
	}
	w := windows{n: n, span: span, history: history, cap: cp.window, table: s.Counts.Published.Value}
	s.Published.Last10s = n10s
	if !w.exact(10) {
		s.Published.Last10sBound = LowerBound
	}
	s.Published.Last1m = w.count(n1m, 60)
	s.Published.Last5m = w.count(n5m, 300)
	s.Published.Last1h = w.count(n, 3600)
	s.Published.RatePerSecond = float64(s.Published.Last1m.Value) / 60
	// Over the last 10 s, or over the history when publishing began more recently
	// (a just-started relay would otherwise read a fraction of its rate).
	window := 10.0
	if history != nil && *history < window {
		window = max(*history, 1)
	}
	s.Published.CurrentPerSecond = float64(n10s) / window
	// The events ever inserted: the seq identity's last value (NULL without the
	// privilege to read it, or before the first insert). The console's incoming rate.
	err = tx.QueryRow(ctx, i.q.SQL("inserted"), i.outbox).Scan(&s.Inserted)
	if err == pgx.ErrNoRows {
		return nil // no identity behind seq: the console derives the rate otherwise
	}
	return err
}

// windows is what the read of the newest published rows found: n rows (at
// most cap), the oldest of them span seconds old, publishing history seconds
// old (nil: none), and table, the published rows the snapshot counts in the
// table (exact, or an estimate never below the rows counted).
type windows struct {
	n       int64
	span    float64
	history *float64
	cap     int64
	table   int64
}

// exact reports whether the rows read hold every row of the last w seconds:
// fewer than the cap were read, or the oldest read is at least w seconds old.
func (v windows) exact(w float64) bool { return v.n < v.cap || v.span >= w }

// count is the count for a window of w seconds, inWindow the rows read in it:
// exact when the rows read hold the window; else an estimate, the newest
// rows' rate over the part of the window that has history, held to its
// bounds: never below the n rows counted (all of them in the window), never
// above table. The estimate grows with w, so no window reads above a longer
// one.
func (v windows) count(inWindow int64, w float64) Count {
	if v.exact(w) {
		return Count{Value: inWindow}
	}
	covered := w
	if v.history != nil && *v.history < w {
		covered = *v.history
	}
	rate := float64(v.n) / max(v.span, 1e-3)
	est := max(min(int64(rate*covered), v.table), v.n)
	return Count{Value: est, Estimate: true, AtLeast: v.n}
}
