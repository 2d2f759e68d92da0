package inspect_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// BenchmarkSnapshotHeldHorizon: a Snapshot of a small live queue (1,000 ready
// events in 100 aggregates) after 0 or 300,000 events were inserted and
// published behind a held REPEATABLE READ snapshot, whose dead versions and
// index entries nothing can remove. A long-lived Inspector, as here and in the
// console, reads from what its previous snapshot saw (floor.go); the one-shot
// status reads from the start.
//
//	go test -run '^$' -bench BenchmarkSnapshotHeldHorizon -benchtime 10x ./internal/inspect/
func BenchmarkSnapshotHeldHorizon(b *testing.B) {
	for _, dead := range []int{0, 300_000} {
		b.Run(fmt.Sprintf("dead=%d", dead), func(b *testing.B) {
			pool, _ := testenv.Pool(b)
			ctx := context.Background()
			if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
				SELECT gen_random_uuid(), 'order', 'a-' || (g % 100), 'E', '{}' FROM generate_series(1, 1000) g`); err != nil {
				b.Fatal(err)
			}
			holder, err := pool.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer holder.Release()
			for _, q := range []string{"BEGIN ISOLATION LEVEL REPEATABLE READ", "SELECT count(*) FROM outbox_event"} {
				if _, err := holder.Exec(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
			defer holder.Exec(context.WithoutCancel(ctx), "ROLLBACK")
			for done := 0; done < dead; done += 10_000 {
				if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
					SELECT gen_random_uuid(), 'order', 'p-' || (g % 5000), 'E', '{}' FROM generate_series(1, 10000) g`); err != nil {
					b.Fatal(err)
				}
				if _, err := pool.Exec(ctx, `UPDATE outbox_event SET published_at = now(), kafka_topic = 't', kafka_partition = 0, kafka_offset = 0
					WHERE published_at IS NULL AND aggregate_id LIKE 'p-%'`); err != nil {
					b.Fatal(err)
				}
			}
			in, err := inspect.New(pool, "public")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := in.Snapshot(ctx); err != nil {
				b.Fatal(err)
			}
			snapshotMedian(ctx, b, in)
		})
	}
}
