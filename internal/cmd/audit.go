package cmd

import (
	"context"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"strings"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// runAudit lists the operators' actions, newest first.
func runAudit(ctx context.Context, args []string, io IO) error {
	fs := newFlagSet("audit", io)
	var db dbFlags
	db.register(fs)
	var f inspect.AuditFilter
	fs.StringVar(&f.Actor, "actor", "", "only actions by actors containing this text (case-insensitive)")
	fs.StringVar(&f.Action, "action", "", "only this action: retry, reset-lease, park, skip, archive, replay, pause, resume")
	fs.DurationVar(&f.NewerThan, "newer-than", 0, "only actions newer than this")
	fs.DurationVar(&f.OlderThan, "older-than", 0, "only actions older than this")
	fs.StringVar(&f.EventID, "event", "", "only actions that touched this event: its id, the start of it, or the end the console shows")
	fs.IntVar(&f.Limit, "limit", 50, "rows to print (at most 1000)")
	fs.Int64Var(&f.Before, "before", 0, "continue below this audit id (printed as next: by the previous page)")
	asJSON := fs.Bool("json", false, "print the rows as JSON")
	if err := parse(fs, args, io); err != nil {
		return err
	}
	if f.Limit < 1 || f.Limit > inspect.AuditLimit {
		return usagef("--limit must be between 1 and %d", inspect.AuditLimit)
	}
	noEvent := f
	noEvent.EventID = ""
	if err := noEvent.Validate(); err != nil {
		return usagef("%v", err)
	}
	in, pool, err := db.inspector(ctx, io, inspect.ReadOnly())
	if err != nil {
		return err
	}
	defer pool.Close()
	if f.EventID != "" {
		// The ids trace and the console print (a start, or a UUIDv7's end),
		// as --id takes them.
		ids := []string{f.EventID}
		if err := resolveIDs(ctx, in, "--event", ids); err != nil {
			return err
		}
		f.EventID = ids[0]
	}
	if err := f.Validate(); err != nil {
		return usagef("%v", err)
	}
	recs, err := in.AuditLog(ctx, f)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(io.Out, recs)
	}
	now := time.Now()
	fmt.Fprintf(io.Out, "%-7s  %-24s  %8s  %-11s  %-24s  %5s  %s\n", "AUDIT", "AT", "AGO", "ACTION", "ACTOR", "ROWS", "REASON · EVENTS")
	for _, r := range recs {
		what := termtext.Sanitize(r.Reason)
		if len(r.EventIDs) > 0 {
			ids := r.EventIDs
			if len(ids) > 3 {
				ids = ids[:3]
			}
			if what != "" {
				what += " · "
			}
			what += strings.Join(ids, " ")
			if n := len(r.EventIDs) - len(ids); n > 0 {
				what += fmt.Sprintf(" +%d", n)
			}
		}
		fmt.Fprintf(io.Out, "#%-6d  %-24s  %8s  %-11s  %-24s  %5d  %s\n", r.ID, inspect.DisplayTime(r.At),
			inspect.Ago(r.At, now), termtext.Sanitize(r.Action), short(termtext.Sanitize(r.Actor), 24), r.Rows, what)
		for _, line := range auditDetail(r) {
			fmt.Fprintf(io.Out, "         %s\n", line)
		}
	}
	if len(recs) == f.Limit {
		fmt.Fprintf(io.Out, "next: --before %d\n", recs[len(recs)-1].ID)
	}
	return nil
}

// auditDiffShown bounds the changes the text log lists under one row.
const auditDiffShown = 5

// auditDetail is what the text log says under a row: each change the action
// function computed (a correction's diff), then the filter its caller passed,
// labelled as given — any JSON a caller liked, perhaps shaped like a diff — so
// that the one is never read for the other.
func auditDetail(r inspect.AuditRecord) []string {
	var lines []string
	for k, c := range r.Diff {
		if k == auditDiffShown {
			lines = append(lines, fmt.Sprintf("diff (computed by the database): %d more changes (audit --json lists them)", len(r.Diff)-k))
			break
		}
		lines = append(lines, "diff (computed by the database): "+termtext.Sanitize(c.String()))
	}
	if f := strings.TrimSpace(string(r.CallerFilter)); f != "" && f != "{}" && f != "null" {
		lines = append(lines, "filter (as given): "+short(termtext.Sanitize(f), 200))
	}
	return lines
}
