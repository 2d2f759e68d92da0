package security

import (
	"context"
	"testing"
	"time"
)

// TestActionsCannotHoldEventsUnbounded: an operator who calls an action in a
// transaction it keeps open (BEGIN; SELECT outboxtop_reset_lease(…every
// unpublished id…); SELECT pg_sleep(20); ROLLBACK) held every event it named
// from the relays and, rolled back, left no audit row. The action locks only
// the events in its states, the statement after it is cancelled within the
// bound, and a transaction left idle after it ends with its session.
func TestActionsCannotHoldEventsUnbounded(t *testing.T) {
	t.Parallel()
	b := setup(t, "operator")
	ids := b.insert(t, "order", "o-1", 20)
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET lease_token = gen_random_uuid(), lease_until = now() + interval '1 hour',
		attempts = 1 WHERE event_id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.admin.Exec(b.ctx, `UPDATE outbox_event SET failed_at = now(), last_error = 'boom' WHERE event_id = $1`, ids[1]); err != nil {
		t.Fatal(err)
	}
	conn, err := b.as.Acquire(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(b.ctx, `SELECT outboxtop_reset_lease('x', '', ARRAY(SELECT event_id FROM outbox_event WHERE published_at IS NULL), NULL, NULL)`); err != nil {
		t.Fatal(err)
	}
	// What a relay's claim could take meanwhile: every ready event.
	var claimable int
	if err := b.admin.QueryRow(b.ctx, `SELECT count(*) FROM (SELECT 1 FROM outbox_event
		WHERE published_at IS NULL AND failed_at IS NULL AND lease_until IS NULL FOR UPDATE SKIP LOCKED) s`).Scan(&claimable); err != nil {
		t.Fatal(err)
	}
	if claimable != 18 {
		t.Errorf("while the reset-lease is held, %d ready events are claimable, want all 18", claimable)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	start := time.Now()
	_, err = tx.Exec(ctx, `SELECT pg_sleep(20)`)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the statement after the action ran %v", took)
	}
	assertRefused(t, "the statement after an action", "57014", err)
	// The transaction is aborted: its locks are gone before the ROLLBACK.
	var id string
	if err := b.admin.QueryRow(b.ctx, `SELECT event_id::text FROM outbox_event WHERE event_id = $1 FOR UPDATE NOWAIT`, ids[0]).Scan(&id); err != nil {
		t.Errorf("the reset event is still locked after the cancelled statement: %v", err)
	}
	_ = tx.Rollback(b.ctx)

	// Left idle after the action, the transaction ends with its session.
	idle, err := b.as.Acquire(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Release()
	itx, err := idle.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := itx.Exec(b.ctx, `SELECT outboxtop_park('x', 'hold', ARRAY(SELECT event_id FROM outbox_event WHERE published_at IS NULL), NULL, NULL)`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		err := b.admin.QueryRow(b.ctx, `SELECT count(*) FROM (SELECT 1 FROM outbox_event
			WHERE published_at IS NULL AND failed_at IS NULL AND lease_until IS NULL FOR UPDATE SKIP LOCKED) s`).Scan(&n)
		if err == nil && n == 18 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after a park left idle in its transaction, %d ready events are claimable (%v), want 18", n, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := itx.Commit(b.ctx); err == nil {
		t.Errorf("the idle transaction committed after its session should have ended")
	}
	var audits int
	if err := b.admin.QueryRow(b.ctx, `SELECT count(*) FROM outbox_audit`).Scan(&audits); err != nil || audits != 0 {
		t.Errorf("%d audit rows (%v): both actions were rolled back", audits, err)
	}
}
