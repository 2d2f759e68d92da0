package security

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// holdHorizon opens a repeatable-read transaction on one of pool's connections
// and keeps it open: a holder of the xmin horizon. It returns the backend's pid.
func holdHorizon(t *testing.T, pool *pgxpool.Pool) (*pgxpool.Conn, int32) {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Conn().Close(context.Background()); conn.Release() })
	for _, q := range []string{`BEGIN ISOLATION LEVEL REPEATABLE READ`, `SELECT 1`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return conn, int32(conn.Conn().PgConn().PID())
}

func holder(t *testing.T, in *inspect.Inspector, pid int32) inspect.XminHolder {
	t.Helper()
	h, err := in.Horizon(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range h.Holders {
		if x.PID == pid {
			return x
		}
	}
	t.Fatalf("pid %d holds no xmin: %+v", pid, h.Holders)
	return inspect.XminHolder{}
}

func alive(t *testing.T, b *bundle, pid int32) bool {
	t.Helper()
	var n int
	if err := b.admin.QueryRow(b.ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestEndingAHolderNeedsTheOperatorsGrants: ending the backend that holds the
// xmin horizon is refused, before any signal, to the console role of
// 'outboxtop grants'; an operator must see the backend's start to fence a
// reused pid (pg_read_all_stats), is refused by PostgreSQL itself without
// pg_signal_backend (the message names it), and never ends a superuser's
// backend; with the grant it ends another role's backend and writes the audit
// row under its own role. No refusal writes an audit row, and no role can
// write one for a backend still running.
func TestEndingAHolderNeedsTheOperatorsGrants(t *testing.T) {
	t.Parallel()
	b := setup(t, "operator")
	console, _ := b.login(t, "console")
	victims, _ := b.login(t, "producer") // a role of no importance, holding a transaction open
	_, victim := holdHorizon(t, victims)
	_, super := holdHorizon(t, b.admin)
	admin, err := inspect.New(b.admin, "public")
	if err != nil {
		t.Fatal(err)
	}
	target, superTarget := holder(t, admin, victim), holder(t, admin, super)
	if target.Hidden || superTarget.Hidden {
		t.Fatalf("a superuser sees the holders hidden: %+v %+v", target, superTarget)
	}
	audits := func() int {
		var n int
		if err := b.admin.QueryRow(b.ctx, `SELECT count(*) FROM outbox_audit`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	refused := func(who string, in *inspect.Inspector, x inspect.XminHolder, want error, text string) {
		t.Helper()
		_, err := in.TerminateBackend(b.ctx, inspect.TerminateRequest{Holder: x, Actor: "mallory"})
		if !errors.Is(err, want) || !strings.Contains(err.Error(), text) {
			t.Errorf("%s: %v; want %v saying %q", who, err, want, text)
		}
		if !alive(t, b, x.PID) {
			t.Fatalf("%s: pid %d was ended anyway", who, x.PID)
		}
	}

	con, err := inspect.New(console, "public")
	if err != nil {
		t.Fatal(err)
	}
	refused("console role", con, target, inspect.ErrNotOperator, "outboxtop grants --role operator")

	op, err := inspect.New(b.as, "public")
	if err != nil {
		t.Fatal(err)
	}
	if x := holder(t, op, victim); !x.Hidden {
		t.Errorf("another role's session seen by an operator without pg_read_all_stats: %+v", x)
	} else {
		refused("operator seeing a hidden backend", op, x, inspect.ErrHolderHidden, "pg_read_all_stats")
	}
	grant := func(role string) {
		t.Helper()
		if _, err := b.admin.Exec(b.ctx, "GRANT "+role+" TO "+pgx.Identifier{b.role}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
	grant("pg_read_all_stats")
	refused("operator without pg_signal_backend", op, holder(t, op, victim), inspect.ErrSignalDenied, "pg_signal_backend")
	grant("pg_signal_backend")
	refused("operator on a superuser's backend", op, superTarget, inspect.ErrSignalDenied, "superuser")
	if n := audits(); n != 0 {
		t.Errorf("%d audit rows after refusals", n)
	}
	if _, err := b.as.Exec(b.ctx, `SELECT outboxtop_audit_terminate('mallory', NULL, jsonb_build_object('pid', $1::int))`, super); err == nil {
		t.Errorf("an audit row for a running backend was written")
	}
	if _, err := console.Exec(b.ctx, `SELECT outboxtop_audit_terminate('mallory', NULL, '{"pid": 1}')`); err == nil {
		t.Errorf("the console role wrote a terminate-backend audit row")
	} else {
		assertDenied(t, "console role auditing a termination", err)
	}

	res, err := op.TerminateBackend(b.ctx, inspect.TerminateRequest{Holder: holder(t, op, victim), Actor: "carol"})
	if err != nil {
		t.Fatalf("operator with pg_signal_backend: %v", err)
	}
	if alive(t, b, victim) {
		t.Errorf("pid %d still running", victim)
	}
	var dbUser, action string
	if err := b.admin.QueryRow(b.ctx, `SELECT db_user, action FROM outbox_audit WHERE audit_id = $1`, res.AuditID).Scan(&dbUser, &action); err != nil ||
		dbUser != b.role || action != "terminate-backend" || audits() != 1 {
		t.Errorf("audit row: db_user %q action %q (%v), %d rows; want %q terminate-backend, one row", dbUser, action, err, audits(), b.role)
	}
}

// backendTarget is outboxtop_audit_terminate's target for backend pid as a
// superuser reads it: pid, backend_start and xact_start, and a user the
// caller made up.
func backendTarget(t *testing.T, b *bundle, pid int32) map[string]any {
	t.Helper()
	var start time.Time
	var xact *time.Time
	if err := b.admin.QueryRow(b.ctx, `SELECT backend_start, xact_start FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&start, &xact); err != nil {
		t.Fatal(err)
	}
	return map[string]any{"pid": pid, "backend_start": start, "xact_start": xact, "kind": "session", "user": "someone-else"}
}

// TestTerminationAuditCannotBeForged: under the operator's grants,
// outboxtop_audit_terminate writes a row only for a backend it has ended
// itself. A pid no backend has, a running backend named with another start or
// transaction, the caller's own backend, a backend of another database and a
// backend the role may not end (without pg_signal_backend: the function
// signals as its owner, a superuser here) are all refused: nothing is ended
// and no row is written. A backend the role may end is ended by the call, and
// its row holds the backend's identity as the database read it, not the
// caller's.
func TestTerminationAuditCannotBeForged(t *testing.T) {
	t.Parallel()
	b := setup(t, "operator")
	victims, victimRole := b.login(t, "producer")
	_, victim := holdHorizon(t, victims)
	elsewhere, err := pgxpool.New(b.ctx, roleDSN(t, testenv.EmptyDB(t), victimRole))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(elsewhere.Close) // after holdHorizon's cleanup releases its connection
	_, away := holdHorizon(t, elsewhere)
	audits := func() int {
		t.Helper()
		var n int
		if err := b.admin.QueryRow(b.ctx, `SELECT count(*) FROM outbox_audit`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	call := func(target any) (*int64, error) {
		js, err := json.Marshal(target)
		if err != nil {
			t.Fatal(err)
		}
		var id *int64
		err = b.as.QueryRow(b.ctx, `SELECT outboxtop_audit_terminate('mallory', 'r', $1::jsonb)`, string(js)).Scan(&id)
		return id, err
	}
	refused := func(what string, target any, code string) {
		t.Helper()
		id, err := call(target)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != code {
			row := "none"
			if id != nil {
				row = fmt.Sprint(*id)
			}
			t.Errorf("%s: audit row %s, error %v; want SQLSTATE %s", what, row, err, code)
		}
		if n := audits(); n != 0 {
			t.Fatalf("%s: %d audit rows", what, n)
		}
		for _, pid := range []int32{victim, away} {
			if !alive(t, b, pid) {
				t.Fatalf("%s: pid %d was ended", what, pid)
			}
		}
	}
	right := backendTarget(t, b, victim)
	refused("a pid no backend has", map[string]any{"pid": 999999, "backend_start": right["backend_start"]}, "P0002")
	refused("a pid alone", map[string]any{"pid": 999999, "kind": "session"}, "22023")
	wrongStart := backendTarget(t, b, victim)
	wrongStart["backend_start"] = right["backend_start"].(time.Time).Add(-time.Second)
	refused("a running backend with another start", wrongStart, "55000")
	wrongXact := backendTarget(t, b, victim)
	wrongXact["xact_start"] = nil
	refused("a running backend with another transaction", wrongXact, "55000")
	refused("a backend the role may not end", right, "42501")

	if _, err := b.admin.Exec(b.ctx, "GRANT pg_signal_backend TO "+pgx.Identifier{b.role}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	refused("another database's backend", backendTarget(t, b, away), "P0002")
	var own string
	if err := b.as.QueryRow(b.ctx, `SELECT jsonb_build_object('pid', pid, 'backend_start', backend_start, 'xact_start', xact_start)::text
		FROM pg_stat_activity WHERE pid = pg_backend_pid()`).Scan(&own); err != nil {
		t.Fatal(err)
	}
	refused("the caller's own backend", json.RawMessage(own), "22023")

	id, err := call(right)
	if err != nil || id == nil {
		t.Fatalf("ending a backend the role may end: row %v, %v", id, err)
	}
	if alive(t, b, victim) {
		t.Errorf("pid %d still running after its audit row", victim)
	}
	var user, dbUser string
	if err := b.admin.QueryRow(b.ctx, `SELECT filter->>'user', db_user FROM outbox_audit WHERE audit_id = $1`, *id).Scan(&user, &dbUser); err != nil ||
		user != victimRole || dbUser != b.role || audits() != 1 {
		t.Errorf("audit row: user %q, db_user %q (%v), %d rows; want %q, %q, one row", user, dbUser, err, audits(), victimRole, b.role)
	}
}
