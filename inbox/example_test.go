package inbox_test

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/inbox"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

func Example() {
	ctx := context.Background()
	pool, done := testenv.ExamplePool() // the consumer's own database
	defer done()
	_, _ = pool.Exec(ctx, `CREATE TABLE shipments (order_id text PRIMARY KEY, n int NOT NULL)`)

	// A record as PollFetches returns it, and the same record delivered again.
	rec := &kgo.Record{
		Topic: "outbox.order",
		Key:   []byte("o-1"),
		Value: []byte(`{"order_id":"o-1"}`),
		Headers: []kgo.RecordHeader{
			{Key: "event_id", Value: []byte(uuid.NewString())},
			{Key: "event_type", Value: []byte("OrderShipped")},
		},
	}
	for range 2 {
		applied, err := inbox.Handle(ctx, pool, "shipping", rec, func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO shipments VALUES ($1, 1)
				ON CONFLICT (order_id) DO UPDATE SET n = shipments.n + 1`, string(rec.Key))
			return err
		})
		fmt.Println("applied:", applied, err)
	}
	var n int
	_ = pool.QueryRow(ctx, `SELECT n FROM shipments WHERE order_id = 'o-1'`).Scan(&n)
	fmt.Println("shipments of o-1:", n)

	// A record without an event_id is refused, not applied.
	_, err := inbox.Handle(ctx, pool, "shipping", &kgo.Record{Topic: "outbox.order"}, nil)
	fmt.Println(err)
	// Output:
	// applied: true <nil>
	// applied: false <nil>
	// shipments of o-1: 1
	// inbox shipping: outbox.order/0@0: record has no event_id header
}
