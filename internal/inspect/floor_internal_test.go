package inspect

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// With a snapshot held from the start, every event published after it leaves
// dead entries in outbox_claim_seq_idx and outbox_aggregate_idx that nothing
// can remove. A long-lived Inspector's Snapshot must not read them again: the
// buffers its pass and its blockers' read take (EXPLAIN ANALYZE, BUFFERS), on
// the same live rows, stay within a small margin whether 2,000 or 20,000
// events were published behind the held snapshot — in the live rows'
// aggregates, before their heads, and after them — while the same statements
// read from the start (as every Snapshot did before, and as the one-shot
// status still does) read several times more at 20,000, the proof that the
// table holds the dead entries. No timing: the figures are counts of pages.
func TestSnapshotCostDoesNotGrowWithAHeldHorizon(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	ctx := context.Background()
	in, err := New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	holder, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	for _, q := range []string{"BEGIN ISOLATION LEVEL REPEATABLE READ", "SELECT count(*) FROM outbox_event"} {
		if _, err := holder.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	defer holder.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	const insert = `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at, available_at)
		SELECT gen_random_uuid(), 'a', $2 || (g % $3), 'E', '{}', $4::timestamptz, coalesce($5::timestamptz, now())
		FROM generate_series(1, $1) g`
	publish := func(n int) {
		// History in the live rows' aggregates, published, then the same
		// live rows again: 200 ready in 20 aggregates, 20 failed heads with
		// 5 ready behind each, 20 scheduled retries heading their own.
		exec(`DELETE FROM outbox_event WHERE published_at IS NULL`)
		exec(insert, n, "g-", 20, nil, nil)
		exec(insert, n/10, "f-", 20, nil, nil)
		exec(`UPDATE outbox_event SET published_at = now(), kafka_topic = 't', kafka_partition = 0, kafka_offset = 0
			WHERE published_at IS NULL`)
		exec(insert, 200, "g-", 20, nil, nil)
		exec(insert, 20, "f-", 20, time.Now(), nil)
		exec(insert, 100, "f-", 20, nil, nil)
		exec(insert, 20, "s-", 20, nil, time.Now().Add(time.Hour))
		// Snapshots as the console takes them: the first after the change
		// reads what changed; the one measured reads what it must.
		for range 2 {
			if _, err := in.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	cost := func(deep bool) int {
		tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off; SET LOCAL jit = off"); err != nil { // as Snapshot does
			t.Fatal(err)
		}
		f := in.floor.get()
		if f == nil {
			t.Fatal("no floor after a Snapshot")
		}
		if deep {
			f = nil
		}
		heads := []byte("{}")
		if f != nil {
			heads = f.headsJSON()
		}
		cp := in.snapCaps()
		total := 0
		for _, s := range []struct {
			sql  string
			args []any
		}{
			{in.q.SQL("pass"), append([]any{cp.scan + 1, cp.probe + 1}, f.passArgs()...)},
			{in.q.SQL("blockers"), []any{cp.blockedProbe + 1, heads}},
		} {
			total += testenv.PlanBuffers(t, tx, s.sql, s.args...)
		}
		// The failed rows' two reads, with the settings snapFailed runs them in.
		if _, err := tx.Exec(ctx, "SET LOCAL enable_sort = off"); err != nil {
			t.Fatal(err)
		}
		total += testenv.PlanBuffers(t, tx, in.failedGroupsSQL())
		total += testenv.PlanBuffers(t, tx, in.q.SQL("failed_count"), cp.failed+1)
		return total
	}
	publish(2_000)
	small, smallDeep := cost(false), cost(true)
	publish(18_000)
	large, largeDeep := cost(false), cost(true)
	t.Logf("buffers per snapshot's pass and blockers: %d after 2,000 published, %d after 20,000 (from the start: %d, %d)",
		small, large, smallDeep, largeDeep)
	if largeDeep < 2*smallDeep {
		t.Fatalf("reads from the start took %d buffers after 20,000 dead rows, %d after 2,000: the held snapshot keeps no dead entries", largeDeep, smallDeep)
	}
	if large > small+small/5+20 {
		t.Errorf("the pass and blockers read %d buffers after 20,000 events published behind a held snapshot, %d after 2,000: their cost grows with the dead rows", large, small)
	}
	s, err := in.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.Counts.Ready, s.Counts.Waiting, s.Counts.Scheduled, s.Counts.Failed, s.Blocked.Count); got != "300 100 20 20 40" {
		t.Errorf("ready, waiting, scheduled, failed, blocked: %s, want 300 100 20 20 40", got)
	}
}
