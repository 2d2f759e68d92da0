// Package relay publishes committed outbox_event rows to Kafka at least once.
//
// # Pipeline
//
// A relay repeats claim → publish → mark:
//
//   - Claim: one short transaction picks up to BatchSize ready events (FOR UPDATE
//     SKIP LOCKED), gives them a fresh lease token, lease_until = now() + Lease and
//     attempts + 1, and commits. No row lock is held while Kafka is called.
//   - Publish: every event of the batch is produced asynchronously with franz-go
//     (acks=all, idempotent): key aggregate_id, value payload, headers event_id,
//     event_type, aggregate_type, aggregate_id, created_at plus the row's headers.
//     The topic is the row's topic, else TopicTemplate.
//   - Mark: one UPDATE per batch sets published_at and the Kafka coordinates, only
//     where the lease token is still the batch's (fencing). A row whose lease was
//     lost — it expired and another relay claimed it — is not touched; the lost
//     fence is counted and logged, not an error.
//
// Up to InFlight batches are published at once, so claiming overlaps publishing;
// memory is bounded by BatchSize × InFlight events. Batches that outlive half their
// lease get it renewed.
//
// # Failures
//
//   - An event that cannot succeed — larger than MaxMessageBytes, a topic name Kafka
//     rejects, an authorization failure — is failed at once: failed_at and
//     last_error are set and it stays until an operator retries or parks it.
//   - Any other per-event error clears the lease and schedules the event again at
//     now() + backoff(attempts) (exponential from BackoffBase, capped at BackoffMax,
//     jittered), with last_error set. After MaxAttempts the event is failed.
//   - A topic that does not exist is an operator's problem, not the event's: the
//     event is scheduled again with a readable last_error and its attempt refunded.
//   - A broker outage is nobody's event's fault: when a batch fails and the brokers
//     do not answer a ping, the batch is released with its attempts refunded and the
//     whole relay backs off, probing the brokers, until they answer. However long
//     the outage, no attempt is burnt and nothing is failed.
//
// # Per-aggregate order
//
// With OrderAggregate (the default), a later event of an aggregate is never
// published before every earlier one was acknowledged, across any number of relay
// processes. Order means seq order, which is commit order when writers serialize on
// the aggregate (the seed's UPDATE of the order row before its INSERT does). The
// ordered claim takes events in seq order and skips an aggregate when
//
//   - the head of its unpublished events holds a live lease (a batch is in flight), or
//   - an earlier event of it is failed or scheduled (it waits; the console shows it
//     as a blocked aggregate).
//
// A batch may carry a run of consecutive events of one aggregate — a hot aggregate
// moves a whole batch per round trip, not one event — and they are produced in seq
// order to one partition, where the idempotent producer keeps them gapless: if one
// fails, the later ones of its partition fail too. Ordered claims are serialized
// across processes by a transaction-level advisory lock (claims are short), which is
// what makes SKIP LOCKED safe here: no claimer can pass over an event that another
// is about to lease. Within a batch, when an event fails, later events of its
// aggregate are released without an attempt so they queue behind it.
//
// OrderNone claims in the seed's order (available_at, created_at, event_id) without
// any of these checks, for throughput.
//
// # Wake-ups
//
// The relay LISTENs on the schema's channel (an insert trigger notifies once per
// statement), waits at most PollInterval otherwise, and sets a timer for the next
// available_at of scheduled events.
//
// Delivery is at least once: an acknowledgement followed by a crash before the
// mark, or a lease lost to a slow publish, publishes the event again.
package relay
