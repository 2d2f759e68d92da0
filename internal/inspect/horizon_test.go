package inspect_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/pgtemp"
	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/wire"
)

// horizonCluster is a cluster of the test's own: prepared transactions and
// logical slots need settings the shared one does not have, and a slot's or a
// prepared transaction's xmin holds back every database of a cluster, which
// other tests would see.
func horizonCluster(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgtemp.Start(ctx, pgtemp.Options{NoFsync: true, Settings: map[string]string{
		"wal_level": "logical", "max_prepared_transactions": "4", "max_replication_slots": "4", "max_wal_senders": "4"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	dsn := c.DSN("postgres")
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Apply(ctx, conn, wire.DefaultSchema, nil); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, dsn
}

// holderSession opens a connection named app and runs statements on it, left
// open (its transaction too) until the test ends.
func holderSession(t *testing.T, dsn, app string, statements ...string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = app
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, q := range statements {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %s: %v", app, q, err)
		}
	}
	return conn
}

func holderOf(h inspect.Horizon, kind string) (inspect.XminHolder, bool) {
	for _, x := range h.Holders {
		if x.Kind == kind {
			return x, true
		}
	}
	return inspect.XminHolder{}, false
}

// TestHorizonNamesEachHolderKind: a logical slot nobody reads (catalog_xmin), a
// repeatable-read report idle in transaction, a writer holding an xid (idle in
// transaction under read committed, so it has no snapshot: only its xid holds
// the horizon), and a prepared transaction are each named with their kind and
// details; a physical slot reserving WAL holds no xmin and is not a holder; a
// role without pg_read_all_stats sees another role's session as hidden, with
// its xmin but no age; the Snapshot carries the same holders, the oldest as
// OldestXmin. Then TerminateBackend ends the writer and audits it, and refuses
// a prepared transaction, a backend that moved on to another transaction and
// one that has ended.
func TestHorizonNamesEachHolderKind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dsn := horizonCluster(t)
	in, err := inspect.New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	h, err := in.Horizon(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Holders) != 0 {
		t.Fatalf("holders of an idle cluster: %+v", h.Holders)
	}
	// A logical slot waits for running transactions to end: it comes first.
	if _, err := pool.Exec(ctx, `SELECT pg_create_logical_replication_slot('unread', 'test_decoding')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `SELECT pg_create_physical_replication_slot('wal_only', true)`); err != nil {
		t.Fatal(err)
	}
	report := holderSession(t, dsn, "nightly-report", `BEGIN ISOLATION LEVEL REPEATABLE READ`, `SELECT count(*) FROM outbox_event`)
	writer := holderSession(t, dsn, "batch-writer", `BEGIN`,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload) VALUES (gen_random_uuid(), 'order', 'o-1', 'E', '{}')`)
	// (Not an outbox insert: its NOTIFY trigger cannot be prepared.)
	holderSession(t, dsn, "two-phase", `CREATE TABLE two_phase (n int)`, `BEGIN`, `INSERT INTO two_phase VALUES (1)`,
		`PREPARE TRANSACTION 'horizon-test'`)
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `ROLLBACK PREPARED 'horizon-test'`) })
	time.Sleep(20 * time.Millisecond) // every transaction a few milliseconds old

	h, err = in.Horizon(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Holders) != 4 {
		t.Fatalf("%d holders, want the slot, the report, the writer and the prepared transaction: %+v", len(h.Holders), h.Holders)
	}
	for k := 1; k < len(h.Holders); k++ {
		if h.Holders[k].XminAge > h.Holders[k-1].XminAge {
			t.Errorf("holders not oldest xmin first: %+v", h.Holders)
		}
	}
	slot, ok := holderOf(h, inspect.HolderSlot)
	if !ok || slot.Name != "unread" || slot.SlotType != "logical" || slot.Holds != "catalog_xmin" || slot.SlotActive == nil || *slot.SlotActive ||
		slot.PID != 0 || slot.Timed() || slot.Backend() {
		t.Errorf("logical slot: %+v (active %v)", slot, slot.SlotActive)
	}
	for _, x := range h.Holders {
		if x.Name == "wal_only" {
			t.Errorf("a physical slot without hot_standby_feedback holds no xmin, yet is a holder: %+v", x)
		}
	}
	rr, ok := holderOf(h, inspect.HolderSession)
	if !ok || rr.PID != int32(report.PgConn().PID()) || rr.Application != "nightly-report" || rr.User != "postgres" ||
		rr.State != "idle in transaction" || rr.Client != "127.0.0.1" || rr.BackendStart == nil || rr.XactStart == nil ||
		rr.Age <= 0 || rr.XminAge < 1 || rr.Hidden || !rr.Timed() || !rr.Backend() {
		t.Errorf("repeatable-read report: %+v", rr)
	}
	w, ok := holderOf(h, inspect.HolderWriter)
	if !ok || w.PID != int32(writer.PgConn().PID()) || w.Application != "batch-writer" || w.State != "idle in transaction" || w.Age <= 0 || w.XminAge < 1 {
		t.Errorf("writer: %+v", w)
	}
	p, ok := holderOf(h, inspect.HolderPrepared)
	if !ok || p.Name != "horizon-test" || p.User != "postgres" || p.PID != 0 || p.Age <= 0 || p.XactStart == nil || !p.Timed() || p.Backend() {
		t.Errorf("prepared transaction: %+v", p)
	}
	if held, ok := h.Held(time.Millisecond); !ok || held.Kind == inspect.HolderSlot {
		t.Errorf("held past 1 ms by %+v (%v), want the oldest timed transaction (a slot under %d xids is not held)", held, ok, inspect.HorizonHeldXids)
	}
	if _, ok := h.Held(inspect.HorizonWarnAfter); ok {
		t.Errorf("held past %s by transactions a second old", inspect.HorizonWarnAfter)
	}
	if h.OldestAge() < rr.Age || h.OldestAge() < w.Age {
		t.Errorf("oldest age %s, below a holder's", h.OldestAge())
	}

	s, err := in.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Health.Horizon.Holders) != 4 || s.Health.OldestXmin == nil || s.Health.OldestXmin.Kind != s.Health.Horizon.Holders[0].Kind {
		t.Errorf("snapshot: oldest %+v, horizon %+v", s.Health.OldestXmin, s.Health.Horizon)
	}

	// Another role without pg_read_all_stats: the same holders, the sessions'
	// details hidden, never an age of 0 that would read as "just begun".
	if _, err := pool.Exec(ctx, `CREATE ROLE peeker LOGIN PASSWORD 'pw'`); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.User, cfg.ConnConfig.Password = "peeker", "pw"
	peek, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer peek.Close()
	pin, err := inspect.New(peek, "public")
	if err != nil {
		t.Fatal(err)
	}
	ph, err := pin.Horizon(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hrr, ok := holderOf(ph, inspect.HolderSession)
	if !ok || !hrr.Hidden || hrr.State != "" || hrr.Age != 0 || hrr.BackendStart != nil || hrr.Timed() || hrr.XminAge < 1 ||
		hrr.PID != rr.PID || hrr.User != "postgres" || hrr.Application != "nightly-report" {
		t.Errorf("another role's report, seen without pg_read_all_stats: %+v", hrr)
	}
	if _, err := pin.TerminateBackend(ctx, inspect.TerminateRequest{Holder: hrr, Actor: "peeker"}); !errors.Is(err, inspect.ErrNotOperator) {
		t.Errorf("ending a backend without EXECUTE on the audit function: %v, want ErrNotOperator", err)
	}
	if _, err := pool.Exec(ctx, `GRANT EXECUTE ON FUNCTION outboxtop_audit_terminate(text, text, jsonb) TO peeker`); err != nil {
		t.Fatal(err)
	}
	if _, err := pin.TerminateBackend(ctx, inspect.TerminateRequest{Holder: hrr, Actor: "peeker"}); !errors.Is(err, inspect.ErrHolderHidden) {
		t.Errorf("ending a hidden backend: %v, want ErrHolderHidden", err)
	}

	// TerminateBackend: the writer ends, its insert is rolled back, one audit row.
	res, err := in.TerminateBackend(ctx, inspect.TerminateRequest{Holder: w, Actor: "carol", Reason: "holding the horizon"})
	if err != nil {
		t.Fatalf("ending the writer: %v", err)
	}
	if err := writer.Ping(ctx); err == nil {
		t.Errorf("the writer's connection still answers")
	}
	var action, actor, reason string
	var pid int32
	if err := pool.QueryRow(ctx, `SELECT action, actor, reason, (filter->>'pid')::int FROM outbox_audit WHERE audit_id = $1`, res.AuditID).
		Scan(&action, &actor, &reason, &pid); err != nil || action != "terminate-backend" || actor != "carol" || reason != "holding the horizon" || pid != w.PID {
		t.Errorf("audit row %d: %q %q %q pid %d (%v)", res.AuditID, action, actor, reason, pid, err)
	}
	if _, err := in.TerminateBackend(ctx, inspect.TerminateRequest{Holder: w, Actor: "carol"}); !errors.Is(err, inspect.ErrHolderGone) {
		t.Errorf("ending it again: %v, want ErrHolderGone", err)
	}
	if _, err := in.TerminateBackend(ctx, inspect.TerminateRequest{Holder: p, Actor: "carol"}); !errors.Is(err, inspect.ErrNotBackend) {
		t.Errorf("ending a prepared transaction: %v, want ErrNotBackend", err)
	}
	// The report moves on to another transaction: the one seen is over, and
	// the backend is left alone.
	for _, q := range []string{`COMMIT`, `BEGIN ISOLATION LEVEL REPEATABLE READ`, `SELECT 1`} {
		if _, err := report.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := in.TerminateBackend(ctx, inspect.TerminateRequest{Holder: rr, Actor: "carol"}); !errors.Is(err, inspect.ErrHolderChanged) {
		t.Errorf("ending a backend that moved on: %v, want ErrHolderChanged", err)
	}
	if err := report.Ping(ctx); err != nil {
		t.Errorf("the report's backend was ended though its transaction changed: %v", err)
	}
	ro, err := inspect.New(pool, "public", inspect.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.TerminateBackend(ctx, inspect.TerminateRequest{Holder: rr}); !errors.Is(err, inspect.ErrReadOnly) {
		t.Errorf("read-only: %v", err)
	}
	// The audit function refuses a row for a backend still running.
	if _, err := pool.Exec(ctx, `SELECT outboxtop_audit_terminate('mallory', NULL, jsonb_build_object('pid', $1::int))`, rr.PID); err == nil {
		t.Errorf("an audit row for a running backend was written")
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_audit`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d audit rows (%v), want the one termination", n, err)
	}
}

// HeldAfter: a timed holder by its age; one without a transaction time (a
// slot, a standby, a hidden session) by its xmin's age.
func TestHorizonHeldBounds(t *testing.T) {
	t.Parallel()
	session := inspect.XminHolder{Kind: inspect.HolderSession, PID: 1, Age: inspect.Age(6 * time.Minute), XminAge: 10}
	slot := inspect.XminHolder{Kind: inspect.HolderSlot, Name: "s", XminAge: inspect.HorizonHeldXids + 1}
	hidden := inspect.XminHolder{Kind: inspect.HolderSession, PID: 2, Hidden: true, XminAge: 5}
	if !session.HeldAfter(inspect.HorizonWarnAfter) || session.HeldAfter(inspect.HorizonCritAfter) || session.HeldAfter(0) {
		t.Errorf("a 6-minute transaction: held past 5m %v, 30m %v, 0 %v", session.HeldAfter(inspect.HorizonWarnAfter),
			session.HeldAfter(inspect.HorizonCritAfter), session.HeldAfter(0))
	}
	if !slot.HeldAfter(inspect.HorizonWarnAfter) || hidden.HeldAfter(inspect.HorizonWarnAfter) {
		t.Errorf("slot past %d xids held %v; hidden session of 5 xids held %v", inspect.HorizonHeldXids, slot.HeldAfter(inspect.HorizonWarnAfter), hidden.HeldAfter(inspect.HorizonWarnAfter))
	}
	h := inspect.Horizon{Holders: []inspect.XminHolder{hidden, slot, session}}
	if x, ok := h.Held(inspect.HorizonWarnAfter); !ok || x.Name != "s" {
		t.Errorf("held by %+v, want the slot (the first held in xmin order)", x)
	}
	catalog := slot
	catalog.Holds = "catalog_xmin"
	if x, ok := (inspect.Horizon{Holders: []inspect.XminHolder{catalog, session}}).Held(inspect.HorizonWarnAfter); !ok || x.PID != 1 {
		t.Errorf("held by %+v, want the session: a catalog_xmin slot holds back only the catalogs", x)
	}
	if x, ok := (inspect.Horizon{Holders: []inspect.XminHolder{catalog}}).Held(inspect.HorizonWarnAfter); !ok || x.Name != "s" {
		t.Errorf("a catalog_xmin slot alone past the xids: held by %+v (%v)", x, ok)
	}
	if h.OldestAge() != session.Age || h.Oldest().PID != 2 {
		t.Errorf("oldest age %s, oldest %+v", h.OldestAge(), h.Oldest())
	}
}
