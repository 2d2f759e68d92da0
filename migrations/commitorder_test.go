package migrations_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/wire"
)

func orderOf(t *testing.T, conn *pgx.Conn) migrations.CommitOrder {
	t.Helper()
	o, err := migrations.CommitOrderOf(context.Background(), conn, "public")
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func setOrder(t *testing.T, conn *pgx.Conn, want migrations.CommitOrder) migrations.CommitOrder {
	t.Helper()
	var got migrations.CommitOrder
	if _, _, err := migrations.MigrateWith(context.Background(), conn, "public", migrations.Options{
		CommitOrder: want, OnOrder: func(o migrations.CommitOrder) { got = o },
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// Every table, one migrate creates and one that existed (the seed's, with its
// rows), detects the commit order until told otherwise. The mode
// switches in place, without rewriting the table, a plain migrate keeps the
// one chosen, the seed's own insert works in every mode, and seq keeps
// increasing across the switches (it comes from another sequence while the
// order is enforced).
func TestCommitOrderSwitchesInPlaceOnTheSeedTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fresh := connect(t, testenv.EmptyDB(t))
	if got := setOrder(t, fresh, migrations.OrderKeep); got != migrations.OrderDetect || orderOf(t, fresh) != migrations.OrderDetect {
		t.Fatalf("a table migrate created is in mode %s, want detect", got)
	}
	var triggers int
	if err := fresh.QueryRow(ctx, `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'outbox_event'::regclass
		AND NOT tgisinternal AND tgtype & 4 = 4`).Scan(&triggers); err != nil {
		t.Fatal(err)
	}
	if triggers != 0 {
		t.Fatalf("a table migrate created has %d insert triggers, want none: the producer's insert pays for nothing", triggers)
	}

	conn := connect(t, testenv.EmptyDB(t))
	if _, err := conn.Exec(ctx, seedDDL); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := conn.Exec(ctx, seedInsert, fmt.Sprintf("o-%d", i%4)); err != nil {
			t.Fatal(err)
		}
	}
	if got := setOrder(t, conn, migrations.OrderKeep); got != migrations.OrderDetect {
		t.Fatalf("the seed's table, upgraded, is in mode %s, want detect", got)
	}
	var file uint32
	if err := conn.QueryRow(ctx, `SELECT relfilenode FROM pg_class WHERE oid = 'outbox_event'::regclass`).Scan(&file); err != nil {
		t.Fatal(err)
	}
	last := int64(0)
	insert := func(mode migrations.CommitOrder) {
		t.Helper()
		for i := range 3 {
			var seq int64
			if err := conn.QueryRow(ctx, seedInsert+" RETURNING seq", fmt.Sprintf("o-%d", i)).Scan(&seq); err != nil {
				t.Fatalf("%s: the seed's insert: %v", mode, err)
			}
			var max int64
			if err := conn.QueryRow(ctx, `SELECT max(seq) FROM outbox_event WHERE seq <> $1`, seq).Scan(&max); err != nil {
				t.Fatal(err)
			}
			if seq <= max || seq <= last {
				t.Fatalf("%s: new seq %d, not past the table's %d (and the last new %d)", mode, seq, max, last)
			}
			last = seq
		}
	}
	insert(migrations.OrderDetect)
	for _, step := range []struct{ set, want migrations.CommitOrder }{
		{migrations.OrderEnforce, migrations.OrderEnforce},
		{migrations.OrderKeep, migrations.OrderEnforce},
		{migrations.OrderOff, migrations.OrderOff},
		{migrations.OrderKeep, migrations.OrderOff},
		{migrations.OrderEnforce, migrations.OrderEnforce},
		{migrations.OrderDetect, migrations.OrderDetect},
		{migrations.OrderKeep, migrations.OrderDetect},
	} {
		if got := setOrder(t, conn, step.set); got != step.want || orderOf(t, conn) != step.want {
			t.Fatalf("migrate --commit-order %q: mode %s (table says %s), want %s", step.set, got, orderOf(t, conn), step.want)
		}
		insert(step.want)
	}
	var after uint32
	if err := conn.QueryRow(ctx, `SELECT relfilenode FROM pg_class WHERE oid = 'outbox_event'::regclass`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != file {
		t.Errorf("switching modes rewrote outbox_event (relfilenode %d, then %d)", file, after)
	}
	var n, distinct int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT seq) FROM outbox_event`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != 20+3*8 || distinct != n {
		t.Errorf("%d rows, %d distinct seq, want %d each", n, distinct, 20+3*8)
	}
}

// Two transactions that insert events of the same two aggregates in opposite
// orders, with the order enforced: PostgreSQL ends one with a deadlock
// (40P01), the other commits, and nothing of the one ended is left.
func TestCommitOrderOppositeOrdersDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.DB(t)
	a, b := connect(t, dsn), connect(t, dsn)
	setOrder(t, a, migrations.OrderEnforce)
	ins := func(tx pgx.Tx, agg string) error {
		_, err := tx.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			VALUES (gen_random_uuid(), 'order', $1, 'Changed', '{}')`, agg)
		return err
	}
	ta, err := a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := b.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ins(ta, "A"); err != nil {
		t.Fatal(err)
	}
	if err := ins(tb, "B"); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	go func() {
		if err := ins(ta, "B"); err != nil {
			_ = ta.Rollback(ctx) // before the test can end and close the connection
			errs <- err
			return
		}
		errs <- ta.Commit(ctx)
	}()
	time.Sleep(100 * time.Millisecond) // a waits for b's B
	go func() {
		if err := ins(tb, "A"); err != nil {
			_ = tb.Rollback(ctx) // before the test can end and close the connection
			errs <- err
			return
		}
		errs <- tb.Commit(ctx)
	}()
	var deadlocks, commits int
	for range 2 {
		err := <-errs
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			commits++
		case errors.As(err, &pgErr) && pgErr.Code == "40P01":
			deadlocks++
		default:
			t.Fatalf("want a deadlock or a commit, got %v", err)
		}
	}
	if deadlocks != 1 || commits != 1 {
		t.Fatalf("%d deadlocks and %d commits, want one of each", deadlocks, commits)
	}
	c := connect(t, dsn)
	var rows, aggs int
	if err := c.QueryRow(ctx, `SELECT count(*), count(DISTINCT aggregate_id) FROM outbox_event`).Scan(&rows, &aggs); err != nil {
		t.Fatal(err)
	}
	if rows != 2 || aggs != 2 {
		t.Fatalf("%d rows of %d aggregates left, want the committed transaction's 2 of 2", rows, aggs)
	}
}

// One transaction of 100,000 events of as many aggregates, in each mode that
// takes locks: past wire.OrderLockRows rows it takes the table's lock instead
// of one a row, so it neither fills PostgreSQL's lock table nor fails.
func TestCommitOrderBulkInsertHoldsFewLocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, mode := range []migrations.CommitOrder{migrations.OrderEnforce, migrations.OrderDetect} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			conn := connect(t, testenv.DB(t))
			setOrder(t, conn, mode)
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
				SELECT gen_random_uuid(), 'order', 'o-' || g, 'Placed', '{}' FROM generate_series(1, 100000) g`); err != nil {
				t.Fatal(err)
			}
			var locks int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`).Scan(&locks); err != nil {
				t.Fatal(err)
			}
			if locks > wire.OrderLockRows+2 { // the first rows' aggregates, and the table's lock shared and exclusive
				t.Errorf("the transaction holds %d advisory locks", locks)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			var n, marked int
			if err := conn.QueryRow(ctx, `SELECT count(DISTINCT seq), count(*) FILTER (WHERE unserialized) FROM outbox_event`).Scan(&n, &marked); err != nil {
				t.Fatal(err)
			}
			if n != 100000 || marked != 0 {
				t.Errorf("%d distinct seq (want 100,000), %d marked unserialized with no other writer (want 0)", n, marked)
			}
		})
	}
}

// A change of mode waits for the table lock at most a few seconds: while it
// waits for a transaction that wrote outbox_event and stays open, every new
// insert waits behind it. It then gives up, saying why, and changes nothing.
func TestCommitOrderChangeGivesUpBehindAnOpenWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.DB(t)
	idle, conn := connect(t, dsn), connect(t, dsn)
	setOrder(t, conn, migrations.OrderEnforce)
	tx, err := idle.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, seedInsert, "o-1"); err != nil {
		t.Fatal(err)
	}
	// Another writer inserts all along: behind each of migrate's tries it
	// waits a try's length at most, not the whole time migrate keeps trying.
	writer := connect(t, dsn)
	stop := make(chan struct{})
	longest := make(chan time.Duration, 1)
	go func() {
		var worst time.Duration
		defer func() { longest <- worst }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			began := time.Now()
			if _, err := writer.Exec(ctx, seedInsert, "o-2"); err != nil {
				t.Error(err)
				return
			}
			worst = max(worst, time.Since(began))
			time.Sleep(5 * time.Millisecond)
		}
	}()
	start := time.Now()
	_, _, err = migrations.MigrateWith(ctx, conn, "public", migrations.Options{CommitOrder: migrations.OrderDetect})
	close(stop)
	if err == nil || !strings.Contains(err.Error(), "stayed open") || time.Since(start) > 30*time.Second {
		t.Fatalf("migrate behind an open writer: %v after %v", err, time.Since(start))
	}
	if worst := <-longest; worst > 1500*time.Millisecond {
		t.Errorf("an insert waited %v behind the change of mode (a try waits 200ms)", worst)
	}
	if o := orderOf(t, conn); o != migrations.OrderEnforce {
		t.Fatalf("the mode became %s", o)
	}
	_ = tx.Rollback(ctx)
	if got := setOrder(t, conn, migrations.OrderDetect); got != migrations.OrderDetect {
		t.Fatalf("once the writer ended: %s", got)
	}
}

// outbox_lock_aggregates and the trigger compute an aggregate's lock the same
// way: after the function has taken a transaction's locks, its inserts take no
// new one (a different key would leave the canonical order unkept, and two
// writers could deadlock after all).
func TestLockAggregatesTakesTheTriggersLocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.DB(t))
	setOrder(t, conn, migrations.OrderEnforce)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	types, ids := []string{"order", "order", "customer", "a/b"}, []string{"42", "7", "42", "c"}
	if _, err := tx.Exec(ctx, `SELECT outbox_lock_aggregates($1, $2)`, types, ids); err != nil {
		t.Fatal(err)
	}
	held := func() int {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := held()
	if before != len(types)+1 {
		t.Fatalf("the function holds %d advisory locks, want %d (one an aggregate, the table's shared)", before, len(types)+1)
	}
	for i := range types {
		if _, err := tx.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			VALUES (gen_random_uuid(), $1, $2, 'E', '{}')`, types[i], ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	if after := held(); after != before {
		t.Fatalf("the inserts took %d locks the function had not", after-before)
	}
}

// A producer's session settings cannot turn the enforced order off: whatever
// it sets outboxtop.order_rows to, its insert of an aggregate another open
// transaction has inserted waits for that transaction.
func TestCommitOrderIgnoresTheProducersSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.DB(t)
	holder, conn := connect(t, dsn), connect(t, dsn)
	setOrder(t, conn, migrations.OrderEnforce)
	open, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Rollback(ctx)
	if _, err := open.Exec(ctx, seedInsert, "o-1"); err != nil {
		t.Fatal(err)
	}
	for _, forged := range []string{"", "0", "64", "65", "66", "1000000", "-5", "x", "99999999999"} {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SELECT set_config('outboxtop.order_rows', $1, true), set_config('lock_timeout', '300ms', true)", forged); err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(ctx, seedInsert, "o-1")
		_ = tx.Rollback(ctx)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
			t.Errorf("outboxtop.order_rows = %q: the insert of an aggregate another transaction holds did not wait for it (%v)", forged, err)
		}
	}
}

// The backlog a seed table holds when it is adopted: migrate numbers it by
// created_at, the transactions' start, which is not their commit order, so
// every unpublished event of it that follows another unpublished event of
// its aggregate is marked of unknown order, and only those. Events inserted
// after the adoption are not.
func TestAdoptedBacklogIsOfUnknownOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, testenv.EmptyDB(t))
	if _, err := conn.Exec(ctx, seedDDL); err != nil {
		t.Fatal(err)
	}
	// a: three unpublished; b: one unpublished after two published; c: one.
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, published_at)
		SELECT gen_random_uuid(), 'order', v.agg, 'E', '{}', now() - v.age * interval '1 second', v.pub
		FROM (VALUES ('a', 5, NULL::timestamptz), ('a', 4, NULL), ('a', 3, NULL),
		             ('b', 9, now()), ('b', 8, now()), ('b', 7, NULL), ('c', 6, NULL)) AS v(agg, age, pub)`); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Apply(ctx, conn, "public", nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := conn.Exec(ctx, seedInsert, "a"); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := conn.Query(ctx, `SELECT aggregate_id, count(*) FILTER (WHERE unserialized) FROM outbox_event GROUP BY 1 ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var agg string
		var n int
		err := r.Scan(&agg, &n)
		return fmt.Sprintf("%s:%d", agg, n), err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "a:2 b:0 c:0"; strings.Join(got, " ") != want {
		t.Fatalf("marked of unknown order per aggregate: %v, want %s", got, want)
	}
}
