package cmd

import (
	"context"
	"errors"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"io"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/pflag"

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
		ids := fs.StringArray("id", nil, "this event id, its start or (6+ hex digits) its end, as trace takes it (repeatable; and the filters)")
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
			newID = fs.Bool("new-id", false, "new events with fresh ids (consumers apply them again), not the same ids (inboxes skip them)")
		}
		if a == inspect.Archive {
			batch = fs.Int("batch-size", 1000, "rows moved per transaction")
		}
		var pf *pacedFlags
		if slices.Contains(inspect.PacedActions, a) {
			pf = registerPaced(fs)
		}
		if err := parse(fs, args, io); err != nil {
			return err
		}
		if pf != nil && *pf.resume != "" {
			return resumeRun(ctx, a, fs, &db, pf, *yes, *readOnly, *actor, io)
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
		if err := resolveIDs(ctx, in, "--id", req.IDs); err != nil {
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
		paced := pf != nil && pf.paced()
		if paced {
			if err := pf.read(); err != nil {
				return err
			}
			pf.printEstimate(io.Out, plan.Count)
		}
		if *dryRun {
			return nil
		}
		if plan.Count == 0 {
			fmt.Fprintf(io.Out, "nothing to %s\n", name)
			return nil
		}
		if paced {
			return runPaced(ctx, in, inspect.PacedRequest{Request: req, Rate: pf.rateValue, Max: pf.max, Chunk: pf.chunk},
				plan.Count, *yes, io)
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
func resolveIDs(ctx context.Context, in *inspect.Inspector, flag string, ids []string) error {
	for k, id := range ids {
		if u, err := uuid.Parse(id); err == nil {
			ids[k] = u.String()
			continue
		}
		full, err := in.Resolve(ctx, id)
		switch {
		case errors.Is(err, inspect.ErrAmbiguous), errors.Is(err, inspect.ErrNotFound):
			return exitError{code: ExitUsage, msg: flag + " " + termtext.OneLine(termtext.Sanitize(err.Error()))}
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

// pacedFlags are retry's, reset-lease's and replay's flags for a paced run:
// the events in chunks, in seq order, at a rate, resumable.
type pacedFlags struct {
	rate   *string
	maxN   *int64
	chunkN *int
	resume *string
	fs     *pflag.FlagSet
	// read from the flags by read
	rateValue float64
	max       int64
	chunk     int
}

func registerPaced(fs *pflag.FlagSet) *pacedFlags {
	return &pacedFlags{
		fs:     fs,
		rate:   fs.String("rate", "", "do the events in chunks at this pace, events a second (500/s; or 30/m, 3600/h), resumable"),
		maxN:   fs.Int64("max", 0, "stop after this many events, in chunks, resumable (0: no bound)"),
		chunkN: fs.Int("chunk", 0, "events per transaction of a paced run (default: one second's worth at --rate, at most 1000)"),
		resume: fs.String("resume", "", "continue paced run RUN after its last recorded chunk, with the target, states and reason it started with"),
	}
}

// paced: the run goes in chunks (--rate, --max or --chunk).
func (p *pacedFlags) paced() bool {
	return p.fs.Changed("rate") || p.fs.Changed("max") || p.fs.Changed("chunk")
}

func (p *pacedFlags) read() error {
	if p.fs.Changed("rate") {
		r, err := parseRate(*p.rate)
		if err != nil {
			return err
		}
		p.rateValue = r
	}
	if *p.maxN < 0 {
		return usagef("--max must not be negative")
	}
	if *p.chunkN < 0 || *p.chunkN > inspect.MaxChunk {
		return usagef("--chunk is 1 to %d events", inspect.MaxChunk)
	}
	p.max, p.chunk = *p.maxN, *p.chunkN
	if p.chunk == 0 {
		p.chunk = inspect.DefaultChunk(p.rateValue)
	}
	return nil
}

// printEstimate says what the paced run of count events would take.
func (p *pacedFlags) printEstimate(w io.Writer, count int64) {
	events, chunks, d := inspect.PacedEstimate(count, p.max, p.rateValue, p.chunk)
	pace := "one chunk after the other"
	if p.rateValue > 0 {
		pace = "at " + formatRate(p.rateValue)
	}
	fmt.Fprintf(w, "paced %s: %d events in %d chunks of up to %d", pace, events, chunks, p.chunk)
	if p.rateValue > 0 {
		fmt.Fprintf(w, ", about %s", shortDuration(d))
	}
	if p.max > 0 && count > p.max {
		fmt.Fprintf(w, " (stops at --max %d of %d)", p.max, count)
	}
	fmt.Fprintln(w)
}

// runPaced confirms and does a new paced run of pr over the count events the
// dry run found.
func runPaced(ctx context.Context, in *inspect.Inspector, pr inspect.PacedRequest, count int64, yes bool, io IO) error {
	name := string(pr.Action)
	events, _, d := inspect.PacedEstimate(count, pr.Max, pr.Rate, pr.Chunk)
	if !yes {
		q := fmt.Sprintf("%s %d events", name, events)
		if pr.Rate > 0 {
			q += fmt.Sprintf(" at %s (about %s)", formatRate(pr.Rate), shortDuration(d))
		}
		if !isTerminal(io.In) {
			return exitError{code: ExitUsage, msg: fmt.Sprintf("refusing to %s without confirmation: stdin is not a terminal; pass --yes", q)}
		}
		if !confirm(io.In, io.Out, q+" as "+pr.Actor+"?") {
			return exitError{code: ExitFailure, msg: name + " cancelled"}
		}
	}
	run, err := in.NewRun(ctx, pr)
	if err != nil {
		return actionError(name, err)
	}
	fmt.Fprintf(io.Out, "run %s: ctrl+c stops it (a chunk commits whole or not at all)\nresume with: outboxtop %s --resume %s\n",
		run.ID(), name, run.ID())
	return doRun(ctx, run, io)
}

// resumeRun continues the paced run named by --resume: its target comes from
// its audit rows, so the flags that name one are refused.
func resumeRun(ctx context.Context, a inspect.Action, fs *pflag.FlagSet, db *dbFlags, pf *pacedFlags, yes, readOnly bool, actor string, io IO) error {
	name := string(a)
	targets := map[string]bool{"id": true, "all": true, "from": true, "reason": true, "new-id": true, "dry-run": true}
	tmp := pflag.NewFlagSet("", pflag.ContinueOnError)
	(&filterFlags{}).register(tmp)
	tmp.VisitAll(func(f *pflag.Flag) { targets[f.Name] = true })
	var bad []string
	fs.Visit(func(f *pflag.Flag) {
		if targets[f.Name] {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return usagef("--resume continues a run with the target it started with: drop %s", strings.Join(bad, ", "))
	}
	if readOnly {
		return exitError{code: ExitUsage, msg: fmt.Sprintf("refusing to %s: read-only mode (--read-only or OUTBOXTOP_READ_ONLY)", name)}
	}
	if err := pf.read(); err != nil {
		return err
	}
	if actor == "" {
		actor = inspect.DefaultActor(io.Getenv)
	}
	in, pool, err := db.inspector(ctx, io)
	if err != nil {
		return err
	}
	defer pool.Close()
	o := inspect.ResumeOptions{Actor: actor, Rate: pf.rateValue, SetRate: fs.Changed("rate"), Max: pf.max, SetMax: fs.Changed("max")}
	if fs.Changed("chunk") {
		o.Chunk = pf.chunk
	}
	run, err := in.ResumeRun(ctx, *pf.resume, o)
	if err != nil {
		return actionError(name, err)
	}
	defer run.Close()
	pr := run.Request()
	if pr.Action != a {
		return usagef("run %s is a %s run: outboxtop %s --resume %s", run.ID(), pr.Action, pr.Action, run.ID())
	}
	left := run.Total() - run.DoneBefore()
	fmt.Fprintf(io.Out, "%s run %s: %d events done before, %d to go", name, run.ID(), run.DoneBefore(), left)
	if pr.Rate > 0 {
		_, _, d := inspect.PacedEstimate(left, 0, pr.Rate, pr.Chunk)
		fmt.Fprintf(io.Out, " at %s, about %s", formatRate(pr.Rate), shortDuration(d))
	}
	fmt.Fprintln(io.Out)
	if left <= 0 {
		fmt.Fprintf(io.Out, "nothing left to %s in run %s\n", name, run.ID())
		return nil
	}
	if !yes {
		q := fmt.Sprintf("resume %s run %s: %d more events", name, run.ID(), left)
		if !isTerminal(io.In) {
			return exitError{code: ExitUsage, msg: fmt.Sprintf("refusing to %s without confirmation: stdin is not a terminal; pass --yes", q)}
		}
		if !confirm(io.In, io.Out, q+" as "+actor+"?") {
			return exitError{code: ExitFailure, msg: name + " cancelled"}
		}
	}
	return doRun(ctx, run, io)
}

// doRun does a started run with its progress and reports it; an interrupt
// or an error says how to continue.
func doRun(ctx context.Context, run *inspect.Run, io IO) error {
	defer run.Close()
	pr := run.Request()
	name := string(pr.Action)
	p := newProgress(io.Out)
	res, err := run.Do(ctx, p.update)
	p.finish(res.Progress)
	again := fmt.Sprintf("outboxtop %s --resume %s", name, run.ID())
	switch {
	case err != nil && ctx.Err() != nil:
		return exitError{code: ExitFailure, msg: fmt.Sprintf("%s run %s interrupted after %d of %d events (each chunk commits whole or not at all)\nresume with: %s",
			name, run.ID(), res.Done, res.Total, again)}
	case err != nil:
		return fmt.Errorf("%w (the chunks done are recorded; continue with: %s)", actionError(name, err), again)
	}
	done, changed := res.Done-run.DoneBefore(), res.Changed-run.ChangedBefore()
	fmt.Fprintf(io.Out, "%s %d of %d events in %d chunks, %s at %s\n(run %s", pastTense[pr.Action], changed, done,
		res.Chunks, shortDuration(res.Elapsed), rateText(res.Progress), run.ID())
	if res.FirstAudit > 0 {
		fmt.Fprintf(io.Out, ", audit #%d–#%d", res.FirstAudit, res.LastAudit)
	}
	fmt.Fprintf(io.Out, ", actor %s)\n", clean(pr.Actor))
	if run.Resumed() {
		fmt.Fprintf(io.Out, "run %s in all: %d of %d events\n", run.ID(), res.Changed, res.Done)
	}
	if n := done - changed; n > 0 {
		fmt.Fprintf(io.Out, "%d changed state since they were read and were left alone\n", n)
	}
	if res.AtMax && !res.Complete {
		fmt.Fprintf(io.Out, "stopped at --max %d; %s --max N goes on to N events in all\n", pr.Max, again)
	}
	if pr.Action == inspect.ResetLease && res.Changed > 0 {
		fmt.Fprintln(io.Out, "the previous holders may still publish these events: a duplicate, which consumers' inboxes absorb")
	}
	return nil
}
