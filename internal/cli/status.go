package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/outboxtop/outboxtop/inspect"
	"github.com/outboxtop/outboxtop/internal/eventstate"
)

// statusJSON is `status --json`: the snapshot's fields plus the check's verdict
// (documented field by field in README.md).
type statusJSON struct {
	inspect.Snapshot
	Check statusCheck `json:"check"`
}

type statusCheck struct {
	Healthy bool     `json:"healthy"`
	Crossed []string `json:"crossed"`
	// MaxOldestSeconds and MaxFailed echo the thresholds (null: not set).
	MaxOldestSeconds *float64 `json:"max_oldest_seconds"`
	MaxFailed        *int64   `json:"max_failed"`
}

func runStatus(ctx context.Context, args []string, io IO) error {
	fs := newFlagSet("status", io)
	var db dbFlags
	db.register(fs)
	asJSON := fs.Bool("json", false, "print the snapshot as JSON (fields in README.md)")
	maxOldest := fs.Duration("max-oldest", 0, "exit 1 when the oldest pending event is older than this (0: no check)")
	maxFailed := fs.Int64("max-failed", -1, "exit 1 when more than this many events are failed (-1: no check)")
	if err := parse(fs, args, io); err != nil {
		return err
	}
	if *maxOldest < 0 {
		return usagef("--max-oldest must not be negative")
	}
	in, pool, err := db.inspector(ctx, io)
	if err != nil {
		return err
	}
	defer pool.Close()
	s, err := in.Snapshot(ctx)
	if err != nil {
		return err
	}
	check := statusCheck{Healthy: true, Crossed: []string{}}
	if *maxOldest > 0 {
		v := maxOldest.Seconds()
		check.MaxOldestSeconds = &v
		if s.OldestPendingAge.Duration() > *maxOldest {
			check.Crossed = append(check.Crossed, fmt.Sprintf("oldest pending %s > %s", s.OldestPendingAge, *maxOldest))
		}
	}
	if *maxFailed >= 0 {
		check.MaxFailed = maxFailed
		if s.Counts.Failed > *maxFailed {
			check.Crossed = append(check.Crossed, fmt.Sprintf("failed %d > %d", s.Counts.Failed, *maxFailed))
		}
	}
	check.Healthy = len(check.Crossed) == 0
	if *asJSON {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(statusJSON{s, check}); err != nil {
			return err
		}
	} else {
		printStatus(io.Out, s)
		if check.Healthy {
			fmt.Fprintln(io.Out, "status: OK")
		} else {
			fmt.Fprintf(io.Out, "status: CRITICAL: %s\n", strings.Join(check.Crossed, "; "))
		}
	}
	if !check.Healthy {
		return exitError{code: ExitFailure, msg: "threshold crossed: " + strings.Join(check.Crossed, "; ")}
	}
	return nil
}

func printStatus(w io.Writer, s inspect.Snapshot) {
	c := s.Counts
	fmt.Fprintf(w, "outboxtop status — schema %s at %s (took %s)\n", s.Schema, s.TakenAt.Format(time.RFC3339), s.Took)
	fmt.Fprintf(w, "pending %d (ready %d, scheduled %d)  leased %d  failed %d  published %s  archived %s\n",
		c.Pending, c.Ready, c.Scheduled, c.Leased, c.Failed, c.Published, c.Archived)
	fmt.Fprintf(w, "oldest pending %s  oldest ready %s  expired leases %d", s.OldestPendingAge, s.OldestReadyAge, s.ExpiredLeases)
	if s.NextScheduledAt != nil {
		fmt.Fprintf(w, "  next scheduled in %s", s.NextScheduledAt.Sub(s.TakenAt).Round(time.Second))
	}
	fmt.Fprintln(w)
	p := s.Published
	fmt.Fprintf(w, "published last 1m %s, 5m %s, 1h %s (%.1f/s)\n", p.Last1m, p.Last5m, p.Last1h, p.RatePerSecond)
	if c.Failed > 0 {
		fmt.Fprintln(w, "failed by error:")
		for _, g := range s.FailedByError {
			fmt.Fprintf(w, "  %6d  %s\n", g.Count, clean(short(g.Key, 100)))
		}
	}
	if s.Blocked.Count > 0 {
		fmt.Fprintf(w, "blocked aggregates %d:\n", s.Blocked.Count)
		for k, b := range s.Blocked.Aggregates {
			if k == 5 {
				fmt.Fprintf(w, "  … (%d more)\n", s.Blocked.Count-5)
				break
			}
			fmt.Fprintf(w, "  %s/%s behind %s (%s) with %d waiting\n", clean(short(b.AggregateType, 30)),
				clean(short(b.AggregateID, 40)), b.Blocker.EventID, b.Blocker.State, b.Waiting)
		}
	}
	for _, con := range s.Inbox {
		fmt.Fprintf(w, "inbox %s: %s consumed, %d in the last 5m\n", clean(short(con.Name, 40)), con.Total, con.Last5m)
	}
	for _, t := range s.Health.Tables {
		fmt.Fprintf(w, "table %s: %d live, %d dead tuples, %s + %s indexes", t.Table, t.LiveTuples, t.DeadTuples,
			humanBytes(t.TableBytes), humanBytes(t.IndexBytes))
		if t.LastAutovacuum != nil {
			fmt.Fprintf(w, ", autovacuum %s ago", s.TakenAt.Sub(*t.LastAutovacuum).Round(time.Second))
		}
		fmt.Fprintln(w)
	}
	if x := s.Health.OldestXmin; x != nil {
		fmt.Fprintf(w, "oldest xmin: %s %s", x.Kind, clean(short(x.Name, 40)))
		if x.PID != 0 {
			fmt.Fprintf(w, " (pid %d, %s)", x.PID, clean(x.State))
		}
		fmt.Fprintf(w, ", %d transactions old, open %s\n", x.XminAge, x.Age)
	}
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func runEvents(ctx context.Context, args []string, io IO) error {
	fs := newFlagSet("events", io)
	var db dbFlags
	db.register(fs)
	state := fs.String("state", "", "ready, scheduled, pending, leased, failed, published or archived (required)")
	var ff filterFlags
	ff.register(fs)
	sort := fs.String("sort", "seq", "order by seq, created_at, available_at, lease_until, failed_at, published_at, archived_at or attempts")
	desc := fs.Bool("desc", false, "descending order")
	limit := fs.Int("limit", 50, "events per page (at most 1000)")
	after := fs.String("after", "", "continue after this cursor (printed as next: by the previous page)")
	asJSON := fs.Bool("json", false, "print the page as JSON")
	if err := parse(fs, args, io); err != nil {
		return err
	}
	st := eventstate.State(*state)
	if st != inspect.Archived {
		if _, err := eventstate.Parse(*state); err != nil {
			return usagef("--state: %v", err)
		}
	}
	f, err := ff.filter()
	if err != nil {
		return err
	}
	if *limit < 1 || *limit > 1000 {
		return usagef("--limit must be between 1 and 1000")
	}
	in, pool, err := db.inspector(ctx, io)
	if err != nil {
		return err
	}
	defer pool.Close()
	page, err := in.List(ctx, inspect.ListOptions{State: st, Filter: f, Sort: inspect.Sort(*sort), Desc: *desc, Limit: *limit, After: *after})
	if err != nil {
		if strings.Contains(err.Error(), "unknown sort") || strings.Contains(err.Error(), "cursor") || strings.Contains(err.Error(), "sort ") {
			return usagef("%v", err)
		}
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(page)
	}
	fmt.Fprintf(io.Out, "%-36s  %-9s  %-20s  %-28s  %8s  %10s  %s\n", "EVENT ID", "STATE", "EVENT TYPE", "AGGREGATE", "ATTEMPTS", "AGE", "LAST ERROR")
	for _, e := range page.Events {
		fmt.Fprintf(io.Out, "%-36s  %-9s  %-20s  %-28s  %8d  %10s  %s\n", e.EventID, e.State,
			clean(short(e.EventType, 20)), clean(short(e.AggregateType+"/"+e.AggregateID, 28)), e.Attempts,
			e.Age.Duration().Round(time.Second), clean(short(e.LastError, 60)))
	}
	if page.Next != "" {
		fmt.Fprintf(io.Out, "next: %s\n", page.Next)
	}
	return nil
}
