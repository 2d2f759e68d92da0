package relay

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// Renew (every tick, from the renew loop) and the shutdown release run while the
// batch's own mark or settle may hold some of its rows. Before, renew waited for
// those rows while locking others in a different order, and PostgreSQL broke the
// resulting deadlock by failing one statement ("renewing lease: deadlock
// detected"). Now neither waits for a row lock at all: with a row held elsewhere
// they return at once, having updated the others, so they cannot be part of a
// deadlock.
func TestRenewAndReleaseNeverWaitForRowLocks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.insertSeed(t, 50, 50, "o-")
	r := b.relay(t, b.config())
	token := uuid.New()
	events, err := r.claim(ctx, token, 50)
	if err != nil || len(events) != 50 {
		t.Fatalf("claim: %d, %v", len(events), err)
	}
	// The batch's mark, in progress: it holds the last event's row.
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	last := events[len(events)-1]
	if _, err := tx.Exec(ctx, r.sql.mark, pgx.StrictNamedArgs{"token": token, "ids": []uuid.UUID{last.id},
		"topics": []string{"t"}, "partitions": []int32{0}, "offsets": []int64{0}}); err != nil {
		t.Fatal(err)
	}
	// Without SKIP LOCKED these would wait for tx until the timeout.
	for name, stmt := range map[string]string{"renew": r.sql.renew, "release": r.sql.release} {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := b.pool.Acquire(sctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(sctx, "SET lock_timeout = '2s'"); err != nil {
			t.Fatal(err)
		}
		ltx, err := conn.Begin(sctx)
		if err != nil {
			t.Fatal(err)
		}
		var args []any
		args = append(args, token)
		if name == "renew" {
			args = append(args, r.cfg.Lease.Milliseconds())
		}
		start := time.Now()
		tag, err := ltx.Exec(sctx, stmt, args...)
		took := time.Since(start)
		_ = ltx.Rollback(ctx)
		_, _ = conn.Exec(ctx, "RESET lock_timeout")
		conn.Release()
		cancel()
		if err != nil {
			t.Fatalf("%s while the mark holds a row: %v (after %v)", name, err, took)
		}
		if tag.RowsAffected() != 49 {
			t.Fatalf("%s updated %d rows, want the 49 not held", name, tag.RowsAffected())
		}
	}
}

// Every statement that waits for row locks and can meet an operator's action takes
// them in seq order, so while it waits for one row it holds none of the later
// ones: the actions (outboxtop_lock_events) and the unblock after a mark. Checked here on
// three events whose event_id order and physical order are both the reverse of
// their seq order: while the statement waits for the first row in seq order,
// another session can still lock the other two.
//
// The relay's mark and settle are not among them: they lock in the order of
// their plan, and taking their rows in seq order first costs a second lock per
// row (10 ms per 1,000 events; the unordered drain fell from 37–43k to 30–32k
// events/s). A mark and an action on the same batch can therefore deadlock (the
// soak on CI: a relay froze just after sending its mark, whose backend ran it,
// while an operator reset the lease of that batch). PostgreSQL ends one of the
// two after deadlock_timeout and each does it again: the relay retries its
// outcome statements, Do its action (TestActionDoneAgainAfterADeadlock).
func TestActionsAndUnblockLockInSeqOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The rows are given their seq (OVERRIDING SYSTEM VALUE), which an
	// enforced commit order would replace with its own.
	testenv.CommitOrder(t, b.pool, migrations.OrderOff)
	ctx := context.Background()
	r := b.relay(t, b.config())
	ins := b.inspector(t)
	action := func(a inspect.Action) func([]uuid.UUID) (int64, error) {
		return func(ids []uuid.UUID) (int64, error) {
			var s []string
			for _, id := range ids {
				s = append(s, id.String())
			}
			res, err := ins.Do(ctx, inspect.Request{Action: a, IDs: s, Reason: "test", Actor: "op"})
			return res.Rows, err
		}
	}
	// Each statement is given its events last in seq order first.
	cases := []struct {
		name  string
		state string // the events' columns: leased, failed or blocked
		run   func(ids []uuid.UUID) (int64, error)
	}{
		{"unblock after a mark", "blocked", func(ids []uuid.UUID) (int64, error) {
			var types, aggs []string
			var after []int64
			for _, id := range ids {
				types = append(types, "order")
				aggs = append(aggs, "a-"+id.String())
				after = append(after, 0)
			}
			tag, err := b.pool.Exec(ctx, r.sql.unblockAfter, types, aggs, 10, after)
			return tag.RowsAffected(), err
		}},
		{"reset-lease", "leased", action(inspect.ResetLease)},
		{"park", "leased", action(inspect.Park)},
		{"retry", "failed", action(inspect.Retry)},
		{"skip", "failed", action(inspect.Skip)},
	}
	for n, c := range cases {
		ids := make([]uuid.UUID, 3)
		for i := range ids {
			ids[i] = uuid.New()
		}
		slices.SortFunc(ids, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
		// Inserted in this order with seq descending: ids[0] is last in seq
		// order, ids[2] first, in event_id order and in the heap alike.
		for i, id := range ids {
			_, err := b.pool.Exec(ctx, `
				INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, seq,
					lease_token, lease_until, failed_at, blocked)
				OVERRIDING SYSTEM VALUE
				SELECT $1::uuid, 'order', 'a-' || $1::uuid::text, 'E', '{}', $2,
					CASE WHEN $3::text = 'leased' THEN gen_random_uuid() END, CASE WHEN $3 = 'leased' THEN now() + interval '1 minute' END,
					CASE WHEN $3 = 'failed' THEN now() END, $3 = 'blocked'`,
				id, 1_000_000+10*n+3-i, c.state)
			if err != nil {
				t.Fatal(err)
			}
		}
		first, later := ids[2], ids[:2]
		blocker, err := b.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := blocker.Exec(ctx, `SELECT 1 FROM outbox_event WHERE event_id = $1 FOR UPDATE`, first); err != nil {
			t.Fatal(err)
		}
		type result struct {
			rows int64
			err  error
		}
		done := make(chan result, 1)
		go func() {
			rows, err := c.run(ids)
			done <- result{rows, err}
		}()
		testenv.WaitFor(t, 10*time.Second, c.name+" waiting for the first row", func() bool {
			return testenv.LockWaiters(t, b.pool) == 1
		})
		if _, err := blocker.Exec(ctx, `SELECT 1 FROM outbox_event WHERE event_id = ANY ($1) FOR UPDATE NOWAIT`, later); err != nil {
			t.Errorf("%s: while it waits for the first row in seq order, it holds a later one: %v", c.name, err)
		}
		_ = blocker.Rollback(ctx)
		res := <-done
		if res.err != nil || res.rows != 3 {
			t.Errorf("%s: %d rows, %v; want 3", c.name, res.rows, res.err)
		}
	}
}
