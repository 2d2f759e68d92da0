package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxtop/outboxtop/internal/pgsql"
)

// Why TerminateBackend refused. Each error's text is one line an operator can
// act on; errors.Is tells them apart.
var (
	// ErrNotBackend: the holder is a prepared transaction or a replication slot,
	// which no backend holds (ROLLBACK PREPARED, pg_drop_replication_slot).
	ErrNotBackend = errors.New("not a backend: only a session, a writer or a walsender can be ended")
	// ErrHolderHidden: this role cannot read the backend's start, so it cannot
	// make sure the pid is still the backend seen.
	ErrHolderHidden = errors.New("the backend's start is hidden from this role (another role's session): re-checking it needs pg_read_all_stats (GRANT pg_monitor)")
	// ErrHolderGone: no backend has the pid any more.
	ErrHolderGone = errors.New("the backend has ended already")
	// ErrHolderChanged: the pid is another backend now, or the backend's
	// transaction is another one: nothing was signalled.
	ErrHolderChanged = errors.New("the pid is no longer the backend and transaction seen (it ended, or the pid was reused): nothing was signalled; look again")
	// ErrSignalDenied: PostgreSQL's rule does not let the role end the
	// backend, or the owner of outboxtop's functions, which sends the signal,
	// may not signal it.
	ErrSignalDenied = errors.New("refused to signal the backend")
	// ErrNotOperator: the role may not audit the termination (no EXECUTE on
	// outboxtop_audit_terminate: not an operator's grants), so nothing is
	// signalled.
	ErrNotOperator = errors.New("this role may not end backends through outboxtop: it lacks EXECUTE on outboxtop_audit_terminate (apply 'outboxtop grants --role operator')")
	// ErrStillRunning: the signal was sent but the backend had not exited
	// within the 5 s outboxtop_audit_terminate waits; no audit row was written.
	ErrStillRunning = errors.New("the backend was signalled but had not exited in 5 s: no audit row was written")
)

// TerminateRequest names the backend to end as it was read (Horizon): its pid
// and, to fence a reused pid, its backend_start and xact_start.
type TerminateRequest struct {
	Holder XminHolder
	Reason string
	// Actor is recorded in the audit row (DefaultActor when empty).
	Actor string
}

// TerminateResult is the audit row written for a termination.
type TerminateResult struct {
	AuditID int64
	Actor   string
}

// TerminateBackend ends the backend r names and writes its audit row, both
// done by outboxtop_audit_terminate, which writes the row only once the
// backend has exited: no caller can audit a termination that did not happen.
// Before that it checks that the role may call it (ErrNotOperator) and sees the
// backend's start (ErrHolderHidden). The function signals only a backend of
// this database whose pid, backend_start and xact_start are still the ones
// read, in the one call that signals: a pid reused by another backend
// (ErrHolderChanged), or one that has ended (ErrHolderGone), is never ended.
// Whether the role may end it is PostgreSQL's rule, which the function applies
// to the session's login role: membership of pg_signal_backend or the
// backend's own role, and never a superuser's backend unless a superuser asks
// (ErrSignalDenied says which is missing).
func (i *Inspector) TerminateBackend(ctx context.Context, r TerminateRequest) (TerminateResult, error) {
	if i.readOnly {
		return TerminateResult{}, ErrReadOnly
	}
	x := r.Holder
	if !x.Backend() {
		return TerminateResult{}, ErrNotBackend
	}
	if err := checkActor(r.Actor); err != nil {
		return TerminateResult{}, err
	}
	actor := r.Actor
	if actor == "" {
		actor = DefaultActor(nil)
	}
	var may bool
	if err := i.pool.QueryRow(ctx, i.q.SQL("may_terminate"), pgsql.Name(i.schema, "outboxtop_audit_terminate")).Scan(&may); err != nil {
		return TerminateResult{}, fmt.Errorf("terminate-backend: %w", err)
	}
	if !may {
		return TerminateResult{}, ErrNotOperator
	}
	if x.Hidden || x.BackendStart == nil {
		return TerminateResult{}, ErrHolderHidden
	}
	target := map[string]any{"pid": x.PID, "kind": x.Kind, "user": x.User, "application": x.Application,
		"client_addr": x.Client, "backend_start": x.BackendStart, "xact_start": x.XactStart,
		"age_seconds": x.Age, "xmin_age": x.XminAge}
	js, err := json.Marshal(target)
	if err != nil {
		return TerminateResult{}, err
	}
	var id *int64
	if err := i.pool.QueryRow(ctx, i.q.SQL("audit_terminate"), actor, r.Reason, string(js)).Scan(&id); err != nil {
		return TerminateResult{}, terminateError(x.PID, err)
	}
	if id == nil {
		return TerminateResult{}, fmt.Errorf("pid %d: %w", x.PID, ErrStillRunning)
	}
	return TerminateResult{AuditID: *id, Actor: actor}, nil
}

// terminateError turns outboxtop_audit_terminate's refusals (by SQLSTATE)
// into the errors TerminateBackend documents, keeping the function's message.
func terminateError(pid int32, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return fmt.Errorf("terminate-backend: %w", err)
	}
	why := strings.TrimPrefix(pgErr.Message, "terminate-backend: ")
	if pgErr.Hint != "" {
		why += " (" + pgErr.Hint + ")"
	}
	switch pgErr.Code {
	case "P0002":
		return fmt.Errorf("pid %d: %w", pid, ErrHolderGone)
	case "55000":
		return fmt.Errorf("pid %d: %w", pid, ErrHolderChanged)
	case "42501":
		return fmt.Errorf("%s: %w", why, ErrSignalDenied)
	}
	return fmt.Errorf("terminate-backend: %w", err)
}
