package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/outbox"
	"github.com/outboxtop/outboxtop/wire"
)

func batch(aggs ...string) []outbox.Event {
	var evs []outbox.Event
	for _, a := range aggs {
		evs = append(evs, outbox.Event{AggregateType: "order", AggregateID: a, EventType: "Changed", Payload: map[string]string{"a": a}})
	}
	return evs
}

// With the order enforced, batches that name the same aggregates in opposite
// orders never deadlock: AddMany takes their locks in one order first, so the
// second waits for the first and both commit, in turn. Detecting, nothing
// takes a lock: the same batches never wait for each other, and never
// deadlock either.
func TestAddManyCanonicalOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, mode := range []migrations.CommitOrder{migrations.OrderEnforce, migrations.OrderDetect} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			testenv.CommitOrder(t, b.pool, mode)
			const pairs = 20
			var wg sync.WaitGroup
			errs := make(chan error, 2*pairs)
			for i := range pairs {
				x, y := fmt.Sprintf("a-%d", i%3), fmt.Sprintf("b-%d", i%3)
				for _, evs := range [][]outbox.Event{batch(x, y), batch(y, x)} {
					wg.Go(func() {
						errs <- pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
							if _, err := outbox.AddMany(ctx, tx, evs); err != nil {
								return err
							}
							// Hold the locks while the other batch starts, and past
							// the moment a detecting insert waits for them.
							time.Sleep(30 * time.Millisecond)
							return nil
						})
					})
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatalf("a batch failed: %v", err)
				}
			}
			var n, marked int
			if err := b.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE unserialized) FROM outbox_event`).Scan(&n, &marked); err != nil {
				t.Fatal(err)
			}
			if n != 4*pairs {
				t.Fatalf("%d events, want %d", n, 4*pairs)
			}
			// Enforced, nothing overlaps; detecting, only a relay that meets
			// the events marks them, and nothing runs on the insert.
			if marked != 0 {
				t.Errorf("%s: %d events marked unserialized by their inserts", mode, marked)
			}
		})
	}
}

// A batch of more than wire.OrderLockRows events takes the table's order lock
// before its COPY, so a writer of one of its aggregates that arrived first
// cannot deadlock with it: the batch waits for that writer, then commits.
func TestAddManyLargeBatchWaitsForOpenWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	testenv.CommitOrder(t, b.pool, migrations.OrderEnforce)
	var aggs []string
	for i := range wire.OrderLockRows * 3 {
		aggs = append(aggs, fmt.Sprintf("o-%d", i))
	}
	open, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, err := outbox.Add(ctx, open, batch(aggs[len(aggs)-1])[0])
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			_, err := outbox.AddMany(ctx, tx, batch(aggs...))
			return err
		})
	}()
	select {
	case err := <-done:
		t.Fatalf("the batch did not wait for the open writer of its aggregate (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	// The open writer goes on writing one of the batch's aggregates: it
	// holds the table's lock shared, so it does not wait for the batch.
	second, err := outbox.Add(ctx, open, batch(aggs[0])[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := open.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the batch: %v", err)
	}
	// The batch took its seq after the open writer committed.
	var n int
	var openMax, batchMin int64
	if err := b.pool.QueryRow(ctx, `SELECT count(*), max(seq) FILTER (WHERE event_id IN ($1, $2)),
		min(seq) FILTER (WHERE event_id NOT IN ($1, $2)) FROM outbox_event`, first, second).Scan(&n, &openMax, &batchMin); err != nil {
		t.Fatal(err)
	}
	if n != len(aggs)+2 || batchMin <= openMax {
		t.Fatalf("%d events (want %d); the batch's seq from %d, the open writer's up to %d", n, len(aggs)+2, batchMin, openMax)
	}
}
