package cmd

import (
	"context"
	"errors"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"strings"

	"github.com/google/uuid"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// The triage actions: one shape for all six (see inspect's package doc for what each
// does).
var (
	runRetry      = actionCommand(inspect.Retry)
	runResetLease = actionCommand(inspect.ResetLease)
	runPark       = actionCommand(inspect.Park)
	runSkip       = actionCommand(inspect.Skip)
	runArchive    = actionCommand(inspect.Archive)
	runReplay     = actionCommand(inspect.Replay)
)

// pastTense names what an action did, for its report line.
var pastTense = map[inspect.Action]string{
	inspect.Retry: "retried", inspect.ResetLease: "reset the lease of", inspect.Park: "parked",
	inspect.Skip: "skipped", inspect.Archive: "archived", inspect.Replay: "replayed",
}

func actionCommand(a inspect.Action) func(context.Context, []string, IO) error {
	return func(ctx context.Context, args []string, io IO) error {
		name := string(a)
		fs := newFlagSet(name, io)
		var db dbFlags
		db.register(fs)
		ids := fs.StringArray("id", nil, "act on this event id, or its start (or, from 6 hex digits, its end) as trace takes it (repeatable); combines with the filters")
		var ff filterFlags
		ff.register(fs)
		all := fs.Bool("all", false, "with no --id and no filter: every eligible event")
		from := fs.String("from", "", "only events still in this state (the state you saw): one of "+sources(a))
		reason := fs.String("reason", "", "why, recorded in the audit row (required for park and skip)")
		dryRun := fs.Bool("dry-run", false, "only count the events the action would change")
		yes := fs.Bool("yes", false, "do not ask for confirmation")
		readOnly := fs.Bool("read-only", false, "refuse to change anything (OUTBOXTOP_READ_ONLY=true for on-call accounts)")
		actor := fs.String("actor", "", "who acts, for the audit row (default: OS user, plus the SSH client from SSH_CONNECTION)")
		var newID *bool
		var batch *int
		if a == inspect.Replay {
			newID = fs.Bool("new-id", false, "insert new events with fresh ids (consumers apply them again) instead of re-sending the same ids (inboxes skip them)")
		}
		if a == inspect.Archive {
			batch = fs.Int("batch-size", 1000, "rows moved per transaction")
		}
		if err := parse(fs, args, io); err != nil {
			return err
		}
		f, err := ff.filter()
		if err != nil {
			return err
		}
		f.All = *all
		req := inspect.Request{Action: a, IDs: *ids, Filter: f, From: wire.State(*from), Reason: *reason, Actor: *actor}
		for k, id := range req.IDs {
			req.IDs[k] = strings.ToLower(strings.TrimSpace(id))
		}
		if newID != nil {
			req.NewID = *newID
		}
		if batch != nil {
			if *batch < 1 {
				return usagef("--batch-size must be positive")
			}
			req.BatchSize = *batch
		}
		if req.Actor == "" {
			req.Actor = inspect.DefaultActor(io.Getenv)
		}
		if *readOnly && !*dryRun {
			return exitError{code: ExitUsage, msg: fmt.Sprintf("refusing to %s: read-only mode (--read-only or OUTBOXTOP_READ_ONLY); --dry-run still counts", name)}
		}
		var opts []inspect.Option
		if *readOnly {
			opts = append(opts, inspect.ReadOnly())
		}
		in, pool, err := db.inspector(ctx, io, opts...)
		if err != nil {
			return err
		}
		defer pool.Close()
		if err := resolveIDs(ctx, in, req.IDs); err != nil {
			return err
		}
		plan, err := in.DryRun(ctx, req)
		if err != nil {
			return actionError(name, err)
		}
		noun := "events"
		if plan.Count == 1 {
			noun = "event"
		}
		fmt.Fprintf(io.Out, "%s: %d %s", name, plan.Count, noun)
		if len(plan.Sample) > 0 {
			fmt.Fprintf(io.Out, " (%s", strings.Join(plan.Sample, ", "))
			if plan.Count > int64(len(plan.Sample)) {
				fmt.Fprintf(io.Out, ", …")
			}
			fmt.Fprint(io.Out, ")")
		}
		fmt.Fprintln(io.Out)
		if *dryRun {
			return nil
		}
		if plan.Count == 0 {
			fmt.Fprintf(io.Out, "nothing to %s\n", name)
			return nil
		}
		if !*yes {
			if !isTerminal(io.In) {
				return exitError{code: ExitUsage, msg: fmt.Sprintf("refusing to %s %d %s without confirmation: stdin is not a terminal; pass --yes", name, plan.Count, noun)}
			}
			if !confirm(io.In, io.Out, fmt.Sprintf("%s %d %s as %s?", name, plan.Count, noun, req.Actor)) {
				return exitError{code: ExitFailure, msg: name + " cancelled"}
			}
		}
		res, err := in.Do(ctx, req)
		if err != nil {
			return actionError(name, err)
		}
		fmt.Fprintf(io.Out, "%s %d of %d %s (audit #%d, actor %s)\n", pastTense[a], res.Rows, plan.Count, noun, res.AuditID, clean(res.Actor))
		if res.Rows < plan.Count {
			fmt.Fprintf(io.Out, "%d changed state since the count and were left alone\n", plan.Count-res.Rows)
		}
		if res.Rows > plan.Count {
			// The filter is read again when the action runs: rows that came to match
			// it meanwhile (published, aged past --older-than) are included.
			fmt.Fprintf(io.Out, "%d more came to match the filter between the count and the action\n", res.Rows-plan.Count)
		}
		if a == inspect.ResetLease && res.Rows > 0 {
			fmt.Fprintln(io.Out, "the previous holders may still publish these events: a duplicate, which consumers' inboxes absorb")
		}
		if a == inspect.Replay && req.NewID && len(res.EventIDs) > 0 {
			fmt.Fprintf(io.Out, "new ids: %s\n", strings.Join(res.EventIDs, ", "))
		}
		return nil
	}
}

// resolveIDs turns the short ids trace accepts into full ones, in place, with
// trace's resolver (inspect.Inspector.Resolve): an operator copies an id from
// the console or a trace and acts on it. A full id is left as it is: one whose
// event is gone by now is the action's "nothing to …", not an error. A short id
// that names no event, or more than one, is refused on one line (exit 2) with
// the candidates.
func resolveIDs(ctx context.Context, in *inspect.Inspector, ids []string) error {
	for k, id := range ids {
		if u, err := uuid.Parse(id); err == nil {
			ids[k] = u.String()
			continue
		}
		full, err := in.Resolve(ctx, id)
		switch {
		case errors.Is(err, inspect.ErrAmbiguous), errors.Is(err, inspect.ErrNotFound):
			return exitError{code: ExitUsage, msg: "--id " + termtext.OneLine(termtext.Sanitize(err.Error()))}
		case err != nil:
			return err
		}
		ids[k] = full
	}
	return nil
}

func sources(a inspect.Action) string {
	var s []string
	for _, st := range a.Sources() {
		s = append(s, string(st))
	}
	return strings.Join(s, ", ")
}

// actionError turns the inspector's refusals into one clear line and exit 2.
func actionError(name string, err error) error {
	switch {
	case errors.Is(err, inspect.ErrReadOnly):
		return exitError{code: ExitUsage, msg: fmt.Sprintf("refusing to %s: read-only mode", name)}
	case errors.Is(err, inspect.ErrNoTarget):
		return usagef("%s: name events with --id or a filter (--event-type, --aggregate-type, --aggregate-id, --older-than, …), or --all", name)
	case errors.Is(err, inspect.ErrReasonRequired):
		return usagef("%s needs --reason", name)
	case errors.Is(err, inspect.ErrInvalidRequest):
		return usagef("%v", err)
	}
	return err
}
