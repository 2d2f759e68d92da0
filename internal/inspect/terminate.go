package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
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
	// ErrSignalDenied: PostgreSQL refused the role the signal.
	ErrSignalDenied = errors.New("PostgreSQL refused to signal the backend")
	// ErrNotOperator: the role may not audit the termination (no EXECUTE on
	// outboxtop_audit_terminate: not an operator's grants), so nothing is
	// signalled.
	ErrNotOperator = errors.New("this role may not end backends through outboxtop: it lacks EXECUTE on outboxtop_audit_terminate (apply 'outboxtop grants --role operator')")
	// ErrStillRunning: the signal was sent but the backend had not exited
	// within TerminateWait.
	ErrStillRunning = errors.New("the backend was signalled but had not exited in 5 s")
)

// TerminateWait is how long TerminateBackend waits for the backend to exit
// (pg_terminate_backend's timeout, in milliseconds).
const TerminateWait = 5000

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

// TerminateBackend ends the backend r names with pg_terminate_backend, as the
// Inspector's own role, and writes an audit row (outboxtop_audit_terminate).
// Before signalling it checks that the role may write that row, and the
// signal itself goes only to a backend whose pid, backend_start and xact_start
// are still the ones read, in the one statement that signals: a pid reused by
// another backend, or a session that has moved on to another transaction, is
// never ended. PostgreSQL decides whether the role may end it: membership of
// pg_signal_backend or the backend's own role, and never a superuser's backend
// unless a superuser asks (ErrSignalDenied says which is missing).
func (i *Inspector) TerminateBackend(ctx context.Context, r TerminateRequest) (TerminateResult, error) {
	if i.readOnly {
		return TerminateResult{}, ErrReadOnly
	}
	x := r.Holder
	if !x.Backend() {
		return TerminateResult{}, ErrNotBackend
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
	var ended bool
	err := i.pool.QueryRow(ctx, i.q.SQL("terminate"), x.PID, x.BackendStart, x.XactStart, TerminateWait).Scan(&ended)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		var alive bool
		if err := i.pool.QueryRow(ctx, i.q.SQL("backend_alive"), x.PID).Scan(&alive); err != nil {
			return TerminateResult{}, fmt.Errorf("terminate-backend: %w", err)
		}
		if !alive {
			return TerminateResult{}, fmt.Errorf("pid %d: %w", x.PID, ErrHolderGone)
		}
		return TerminateResult{}, fmt.Errorf("pid %d: %w", x.PID, ErrHolderChanged)
	case err != nil:
		return TerminateResult{}, signalError(x.PID, err)
	case !ended:
		return TerminateResult{}, fmt.Errorf("pid %d: %w", x.PID, ErrStillRunning)
	}
	target := map[string]any{"pid": x.PID, "kind": x.Kind, "user": x.User, "application": x.Application,
		"client_addr": x.Client, "backend_start": x.BackendStart, "xact_start": x.XactStart,
		"age_seconds": x.Age, "xmin_age": x.XminAge}
	js, err := json.Marshal(target)
	if err != nil {
		return TerminateResult{}, err
	}
	res := TerminateResult{Actor: actor}
	if err := i.pool.QueryRow(ctx, i.q.SQL("audit_terminate"), actor, r.Reason, string(js)).Scan(&res.AuditID); err != nil {
		return TerminateResult{}, fmt.Errorf("pid %d was ended, but its audit row could not be written: %w", x.PID, err)
	}
	return res, nil
}

// signalError turns PostgreSQL's refusal to signal into what the role lacks.
func signalError(pid int32, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		return fmt.Errorf("terminate-backend: %w", err)
	}
	// PostgreSQL 15 says "must be a superuser to terminate superuser process",
	// 16 and later "Only roles with the SUPERUSER attribute may terminate …" in
	// the detail.
	if strings.Contains(strings.ToLower(pgErr.Message+" "+pgErr.Detail), "superuser") {
		return fmt.Errorf("pid %d is a superuser's backend: only a superuser may end it: %w", pid, ErrSignalDenied)
	}
	return fmt.Errorf("pid %d: the role needs membership of pg_signal_backend (GRANT pg_signal_backend TO <role>) or of the backend's role: %w", pid, ErrSignalDenied)
}
