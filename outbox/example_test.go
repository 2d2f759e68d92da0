package outbox_test

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/outbox"
)

func Example() {
	ctx := context.Background()
	pool, done := testenv.ExamplePool() // your application's *pgxpool.Pool
	defer done()
	_, _ = pool.Exec(ctx, `CREATE TABLE orders (id text PRIMARY KEY, status text NOT NULL);
		INSERT INTO orders VALUES ('o-1', 'placed')`)

	// The order's change and its event: one transaction.
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE orders SET status = 'confirmed' WHERE id = $1`, "o-1"); err != nil {
			return err
		}
		_, err := outbox.Add(ctx, tx, outbox.Event{
			AggregateType: "order",
			AggregateID:   "o-1",
			EventType:     "OrderConfirmed",
			Payload:       map[string]string{"order_id": "o-1", "status": "confirmed"},
			Headers:       map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		})
		return err
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	var eventType, payload string
	_ = pool.QueryRow(ctx, `SELECT event_type, payload::text FROM outbox_event WHERE aggregate_id = 'o-1'`).
		Scan(&eventType, &payload)
	fmt.Println(eventType, payload)
	// Output: OrderConfirmed {"status": "confirmed", "order_id": "o-1"}
}
