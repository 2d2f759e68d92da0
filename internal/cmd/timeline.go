package cmd

import (
	"context"
	"errors"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"io"
	"strings"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// splitAggregate reads TYPE/ID; the id may hold more slashes, the type not.
func splitAggregate(s string) (typ, id string, err error) {
	typ, id, ok := strings.Cut(s, "/")
	if !ok || typ == "" || id == "" {
		return "", "", usagef("--aggregate wants TYPE/ID (order/4711), not %q", s)
	}
	return typ, id, nil
}

// runTimeline is events --aggregate: one aggregate's events in the order the relay
// publishes them, its blocker and what waits behind it.
func runTimeline(ctx context.Context, db *dbFlags, aggregate string, limit int, asJSON bool, io IO) error {
	typ, id, err := splitAggregate(aggregate)
	if err != nil {
		return err
	}
	in, pool, err := db.inspector(ctx, io, inspect.ReadOnly())
	if err != nil {
		return err
	}
	defer pool.Close()
	t, err := in.Timeline(ctx, typ, id, limit)
	if errors.Is(err, inspect.ErrNotFound) {
		return exitError{code: ExitFailure, msg: termtext.Sanitize(err.Error())}
	}
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(io.Out, t)
	}
	printTimeline(io.Out, t, time.Now())
	return nil
}

func printTimeline(w io.Writer, t inspect.Timeline, now time.Time) {
	agg := termtext.Sanitize(t.AggregateType) + "/" + termtext.Sanitize(t.AggregateID)
	fmt.Fprintf(w, "AGGREGATE %s · %d events listed", agg, len(t.Events))
	if t.Before > 0 || t.After > 0 {
		fmt.Fprintf(w, " (%d earlier and %d later not listed)", t.Before, t.After)
	}
	fmt.Fprintln(w)
	if b := t.Blocker; b != nil {
		since := "scheduled, next attempt " + inspect.Relative(b.AvailableAt, now)
		if b.FailedAt != nil {
			since = "failed " + inspect.Relative(*b.FailedAt, now)
		}
		fmt.Fprintf(w, "BLOCKED by seq %d %s (%s)", b.Seq, b.EventID, since)
		if t.WaitingSince != nil {
			fmt.Fprintf(w, ": %d waiting behind it, the oldest for %s", t.Waiting, inspect.Ago(*t.WaitingSince, now))
		}
		fmt.Fprintln(w)
		if b.LastError != "" {
			fmt.Fprintf(w, "  last error: %s\n", short(termtext.Sanitize(b.LastError), 200))
		}
	} else {
		fmt.Fprintln(w, "not blocked")
	}
	fmt.Fprintf(w, "\n   %8s  %-36s  %-9s  %3s  %-24s  %7s  %s\n", "SEQ", "EVENT ID", "STATE", "ATT", "KAFKA", "AGE", "APPLIED BY")
	for _, e := range t.Events {
		mark, state := "  ", string(e.State)
		switch {
		case t.Blocker != nil && e.EventID == t.Blocker.EventID:
			mark, state = ">>", strings.ToUpper(state)
		case t.Blocker != nil && e.Seq > t.Blocker.Seq && e.PublishedAt == nil && e.ArchivedAt == nil:
			state += "*" // waits behind the blocker
		}
		kafka := "-"
		if e.KafkaPartition != nil && e.KafkaOffset != nil {
			kafka = fmt.Sprintf("%s[%d]@%d", short(termtext.Sanitize(e.KafkaTopic), 14), *e.KafkaPartition, *e.KafkaOffset)
		}
		applied := make([]string, 0, len(e.Consumed))
		for _, c := range e.Consumed {
			applied = append(applied, termtext.Sanitize(c.Consumer))
		}
		by := strings.Join(applied, ", ")
		if e.State == inspect.Archived && e.PublishedAt == nil {
			state = inspect.UnpublishedLabel(e.LastError) // archived without being published
		}
		if len(t.Consumers) > 0 && len(applied) == 0 && e.PublishedAt != nil {
			by = "none" // published, and no inbox has it
		}
		fmt.Fprintf(w, "%s %8d  %-36s  %-9s  %3d  %-24s  %7s  %s\n", mark, e.Seq, e.EventID, state, e.Attempts, kafka,
			ageText(e.Event, now), by)
	}
	if t.Blocker != nil {
		fmt.Fprintln(w, "\n>> the blocker; * waits behind it. 'outboxtop retry --id ID' tries it again, 'outboxtop skip --id ID' lets the rest flow.")
	}
}
