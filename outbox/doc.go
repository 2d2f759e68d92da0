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
//			// The row lock makes concurrent confirmations of one order wait
//			// for each other; the event's place in the order is the
//			// database's (see Order below).
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
// # Order
//
// The relay publishes each aggregate's events in seq order among those it can
// see; an event whose transaction is still open is invisible, so one committed
// after it goes first, which is its commit order. By default (the detect commit
// order, for every table) nothing runs on an insert but column defaults, and
// nothing waits: writers that lock the aggregate (the order row above) before
// inserting get seq order = commit order; where two transactions that wrote
// one aggregate overlapped, the relay marks the later event of unknown order
// (unserialized) when it meets both unpublished, and the console, status and
// the metrics count those aggregates.
//
// Where the commit order is enforced (outboxtop migrate --commit-order
// enforce, opt-in), the database makes seq order commit order for every
// writer: a trigger takes the aggregate's lock before it takes seq, so an
// event inserted while another open transaction has inserted one of the same
// aggregate waits for that transaction to end. No application lock is needed,
// and this holds for any client, COPY and multi-row INSERT. What it costs:
// writers of one aggregate wait for each other from their insert to their
// commit (insert events late in the transaction), and two transactions that
// insert events of the same two aggregates in opposite orders can deadlock:
// PostgreSQL ends one with SQLSTATE 40P01 and the other commits. AddMany takes
// a batch's locks in one canonical order first, so two batches never
// deadlock; a transaction that calls Add for several aggregates should use
// one AddMany instead, or call the schema's outbox_lock_aggregates (types
// text[], ids text[]) first, as a writer in another language would. A
// transaction of more than wire.OrderLockRows events takes the whole table's
// order lock instead, and waits for every open writer.
//
// Use a Writer to write to a schema other than public:
//
//	w := outbox.Writer{Schema: "billing"}
//	id, err := w.Add(ctx, tx, ev)
package outbox
