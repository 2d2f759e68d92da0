// Package inbox is the consumer's side of the transactional outbox: it makes
// the effect of a Kafka record happen once per consumer even though outboxtop's
// relay delivers each event at least once.
//
// Handle inserts (consumer_name, event_id) into consumed_event with ON
// CONFLICT DO NOTHING and, in the same transaction, runs the caller's apply
// only when the row was new. The event id comes from the record's event_id
// header (wire.HeaderEventID), which the relay sets; a record without a valid
// one is an error (ErrNoEventID, ErrMalformedEventID), never applied blindly.
//
// A consumer on franz-go commits offsets after handling, so a crash in between
// becomes a redelivery that Handle skips:
//
//	cl, _ := kgo.NewClient(
//		kgo.SeedBrokers(brokers...),
//		kgo.ConsumerGroup("billing"),
//		kgo.ConsumeRegex(), kgo.ConsumeTopics(`^outbox\.`),
//		kgo.DisableAutoCommit(),
//	)
//	for {
//		fetches := cl.PollFetches(ctx)
//		for _, rec := range fetches.Records() {
//			_, err := inbox.Handle(ctx, pool, "billing", rec, func(ctx context.Context, tx pgx.Tx) error {
//				_, err := tx.Exec(ctx, `UPDATE account SET balance = balance + $1 WHERE id = $2`, amount(rec), string(rec.Key))
//				return err
//			})
//			if err != nil { … retry the record, or park it and stop … }
//		}
//		if err := cl.CommitUncommittedOffsets(ctx); err != nil { … }
//	}
//
// The effect must be made through the transaction apply is given: an effect
// outside it (an HTTP call, a second database) is not covered, and a
// redelivery after a failed commit repeats it.
//
// consumed_event grows by one row per event and consumer; Prune removes rows
// older than an age in small batches. Keep that age longer than any
// redelivery can be late. Prune deletes through the schema's
// outboxtop_inbox_prune, so a consumer role (`outboxtop grants --role
// consumer`) needs no DELETE on the table: a role with one could lock it and
// stop every other consumer's inserts.
//
// On a consumed_event that `outboxtop migrate` created, row-level security
// lets a role see and write only the rows whose consumer name is the role's
// name, so run each consumer as a role named after it. A consumed_event the
// application had before, which migrate adopts, keeps the row security the
// application gave it; Prune there too deletes only the inbox named after
// the session's role (or any, as the table's owner).
package inbox
