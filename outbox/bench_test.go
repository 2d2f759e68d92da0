package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/outbox"
)

// BenchmarkAdd is one event per transaction, the seed's shape. testenv's cluster
// runs with fsync off: commits cost more on a production server.
func BenchmarkAdd(b *testing.B) {
	ctx := context.Background()
	pool, _ := testenv.Pool(b)
	ev := outbox.Event{AggregateType: "order", AggregateID: "o-1", EventType: "OrderPaid", Payload: map[string]int{"cents": 1250}}
	for b.Loop() {
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := outbox.Add(ctx, tx, ev)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAddMany copies batches of 1,000 events.
func BenchmarkAddMany(b *testing.B) {
	ctx := context.Background()
	pool, _ := testenv.Pool(b)
	evs := make([]outbox.Event, 1000)
	for i := range evs {
		evs[i] = outbox.Event{AggregateType: "order", AggregateID: fmt.Sprintf("o-%d", i%50), EventType: "OrderPlaced", Payload: map[string]int{"i": i}}
	}
	for b.Loop() {
		if _, err := outbox.AddMany(ctx, pool, evs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(evs))/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkCommitOrder is insert throughput in each commit-order mode, in one
// run so the modes compare: a COPY of 100,000 events (10,000 aggregates) in
// one transaction, and 8 writers of single-event transactions, either over
// 10,000 aggregates (they rarely meet) or all on one aggregate (enforced, each
// waits for the one before it to commit). Run with
//
//	go test ./outbox -run '^$' -bench CommitOrder -benchtime 3x
func BenchmarkCommitOrder(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []migrations.CommitOrder{migrations.OrderOff, migrations.OrderDetect, migrations.OrderEnforce} {
		_, dsn := testenv.Pool(b)
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			b.Fatal(err)
		}
		cfg.MaxConns = 8 // one a writer
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer pool.Close()
		testenv.CommitOrder(b, pool, mode)
		b.Run(string(mode)+"/copy100k", func(b *testing.B) {
			rows := make([][]any, 100_000)
			for i := range rows {
				rows[i] = []any{uuid.New(), "order", fmt.Sprintf("o-%d", i%10_000), "Placed", []byte(`{"n":1}`)}
			}
			for b.Loop() {
				for i := range rows {
					rows[i][0] = uuid.New()
				}
				if _, err := pool.CopyFrom(ctx, pgx.Identifier{"outbox_event"},
					[]string{"event_id", "aggregate_type", "aggregate_id", "event_type", "payload"}, pgx.CopyFromRows(rows)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(rows))/b.Elapsed().Seconds(), "events/s")
		})
		for _, aggs := range []int{10_000, 1} {
			b.Run(fmt.Sprintf("%s/writers8/aggregates%d", mode, aggs), func(b *testing.B) {
				const writers, each = 8, 500
				for b.Loop() {
					var wg sync.WaitGroup
					for w := range writers {
						wg.Go(func() {
							for i := range each {
								ev := outbox.Event{AggregateType: "order", AggregateID: fmt.Sprintf("o-%d", (w*each+i)%aggs),
									EventType: "Paid", Payload: map[string]int{"n": i}}
								if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
									_, err := outbox.Add(ctx, tx, ev)
									return err
								}); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
				}
				b.ReportMetric(float64(b.N*writers*each)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}
