package cmd

import (
	"context"
	"errors"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"strings"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// runTerminateBackend is `outboxtop terminate-backend --pid N`: it ends a backend
// that holds the xmin horizon (inspect.Inspector.TerminateBackend), after the
// same confirmation as the actions, and audits it. The pid must be one of the
// holders read now: the command ends a holder, not any backend, and it signals
// that pid only while its backend_start and xact_start are still the ones read.
func runTerminateBackend(ctx context.Context, args []string, io IO) error {
	const name = "terminate-backend"
	fs := newFlagSet(name, io)
	var db dbFlags
	db.register(fs)
	pid := fs.Int32("pid", 0, "the pid of the backend holding the xmin horizon (status and the console name it)")
	reason := fs.String("reason", "", "why, recorded in the audit row")
	dryRun := fs.Bool("dry-run", false, "only show the holder the command would end")
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	readOnly := fs.Bool("read-only", false, "refuse to change anything (OUTBOXTOP_READ_ONLY=true for on-call accounts)")
	actor := fs.String("actor", "", "who acts, for the audit row (default: OS user, plus the SSH client from SSH_CONNECTION)")
	if err := parse(fs, args, io); err != nil {
		return err
	}
	if *pid <= 0 {
		return usagef("%s needs --pid: the backend holding the xmin horizon, as status names it", name)
	}
	if *readOnly && !*dryRun {
		return exitError{code: ExitUsage, msg: fmt.Sprintf("refusing to %s: read-only mode (--read-only or OUTBOXTOP_READ_ONLY); --dry-run still shows the holder", name)}
	}
	if *actor == "" {
		*actor = inspect.DefaultActor(io.Getenv)
	}
	in, pool, err := db.actingInspector(ctx, io, *readOnly)
	if err != nil {
		return err
	}
	defer pool.Close()
	h, err := in.Horizon(ctx)
	if err != nil {
		return err
	}
	var x *inspect.XminHolder
	var holders []string
	for k := range h.Holders {
		if h.Holders[k].PID == *pid {
			x = &h.Holders[k]
		}
		if h.Holders[k].PID != 0 {
			holders = append(holders, fmt.Sprint(h.Holders[k].PID))
		}
	}
	if x == nil {
		others := "none is a backend"
		if len(holders) > 0 {
			others = "the backends holding it: " + strings.Join(holders, ", ")
		}
		return exitError{code: ExitUsage, msg: fmt.Sprintf("%s: pid %d does not hold the xmin horizon (%s)", name, *pid, others)}
	}
	fmt.Fprintf(io.Out, "%s: %s\n", name, holderText(*x))
	if *dryRun {
		return nil
	}
	if !*yes {
		if !isTerminal(io.In) {
			return exitError{code: ExitUsage, msg: fmt.Sprintf("refusing to %s pid %d without confirmation: stdin is not a terminal; pass --yes", name, *pid)}
		}
		age := "age hidden"
		if !x.Hidden {
			age = "open " + x.Age.String()
		}
		if !confirm(io.In, io.Out, fmt.Sprintf("end pid %d (%s, %s) with pg_terminate_backend as %s?", *pid, clean(orDash(x.Application)), age, *actor)) {
			return exitError{code: ExitFailure, msg: name + " cancelled"}
		}
	}
	res, err := in.TerminateBackend(ctx, inspect.TerminateRequest{Holder: *x, Reason: *reason, Actor: *actor})
	if err != nil {
		return terminateError(name, err)
	}
	fmt.Fprintf(io.Out, "ended pid %d (audit #%d, actor %s); its transaction was rolled back and vacuum may remove what it held\n",
		*pid, res.AuditID, clean(res.Actor))
	return nil
}

// terminateError turns TerminateBackend's refusals into one line and exit 2:
// they are the operator's to fix (a grant, a fresh look), not failures.
func terminateError(name string, err error) error {
	for _, refusal := range []error{inspect.ErrReadOnly, inspect.ErrNotBackend, inspect.ErrHolderHidden, inspect.ErrHolderGone,
		inspect.ErrHolderChanged, inspect.ErrSignalDenied, inspect.ErrNotOperator} {
		if errors.Is(err, refusal) {
			return exitError{code: ExitUsage, msg: fmt.Sprintf("refusing to %s: %s", name, termtext.OneLine(err.Error()))}
		}
	}
	return err
}
