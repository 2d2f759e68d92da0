// Package outbox is the producer's side of the transactional outbox: it adds
// events to outbox_event inside the application's own transaction, so the
// business change and the event that announces it commit together or not at
// all. outboxtop's relay then publishes each event to Kafka at least once.
//
// The seed's confirmOrder — update the order and add its event in one
// transaction — reads in Go:
//
//	func confirmOrder(ctx context.Context, pool *pgxpool.Pool, orderID string) error {
//		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
//			// Locking the order row serialises writers of this aggregate, so
//			// its events' insertion order (seq) is their commit order.
//			tag, err := tx.Exec(ctx,
//				`UPDATE orders SET status = 'confirmed' WHERE id = $1 AND status = 'placed'`, orderID)
//			if err != nil {
//				return err
//			}
//			if tag.RowsAffected() == 0 {
//				return fmt.Errorf("order %s cannot be confirmed", orderID)
//			}
//			_, err = outbox.Add(ctx, tx, outbox.Event{
//				AggregateType: "order",
//				AggregateID:   orderID,
//				EventType:     "OrderConfirmed",
//				Payload:       map[string]any{"order_id": orderID, "status": "confirmed"},
//			})
//			return err
//		})
//	}
//
// Add inserts one event; AddMany copies many with one COPY (one relay
// wake-up for the batch). Both validate every event before sending anything:
// an empty aggregate type, aggregate id or event type, a payload that is not
// valid JSON (or that jsonb cannot store), an illegal topic name or a header
// the relay reserves is an error wrapping ErrInvalidEvent, and the caller's
// transaction is left untouched and usable. The topic and header rules are the
// relay's own, from package wire, which holds the contract between producer,
// relay and consumer.
//
// Each event gets a UUIDv7 event_id unless it brings its own. The relay sends
// it as the event_id Kafka header (wire.HeaderEventID); consumers deduplicate on
// it (package inbox).
// Delivery is at least once: a consumer may see an event twice, never zero
// times once its transaction committed.
//
// Use a Writer to write to a schema other than public:
//
//	w := outbox.Writer{Schema: "billing"}
//	id, err := w.Add(ctx, tx, ev)
package outbox
