package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// A writer frozen mid-transaction, with the order enforced, holds up the
// other writers of its aggregate: the snapshot counts the waiting insert and
// names the session that holds it up; once that session ends, no insert
// waits.
func TestSnapshotNamesTheWriterHoldingUpInserts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := b.ctx
	testenv.CommitOrder(t, b.pool, migrations.OrderEnforce)
	const ins = `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		VALUES (gen_random_uuid(), 'order', 'frozen', 'E', '{}')`
	frozen, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer frozen.Rollback(ctx)
	var pid int32
	if err := frozen.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := frozen.Exec(ctx, ins); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.pool.Exec(context.WithoutCancel(ctx), ins)
		done <- err
	}()
	var s inspect.Snapshot
	testenv.WaitFor(t, 10*time.Second, "the second insert waiting", func() bool {
		s, err = b.in.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s.Order.Waiting == 1
	})
	if len(s.Order.Holders) != 1 || s.Order.Holders[0].PID != pid || s.Order.Holders[0].State != "idle in transaction" {
		t.Fatalf("holders %+v, want pid %d idle in transaction", s.Order.Holders, pid)
	}
	if err := frozen.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s, err = b.in.Snapshot(ctx); err != nil || s.Order.Waiting != 0 || len(s.Order.Holders) != 0 {
		t.Fatalf("after the commit: %+v (%v)", s.Order, err)
	}
}
