package outbox_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/testenv"
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
