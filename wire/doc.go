// Package wire is the contract the parts of outboxtop keep with each other and
// with the applications around them: what a producer writes into outbox_event,
// what the relay sends to Kafka, what a consumer reads back, and what the
// console means when it calls an event ready or failed.
//
//   - Kafka record headers: the relay sets HeaderEventID, HeaderEventType,
//     HeaderAggregateType, HeaderAggregateID and HeaderCreatedAt on every record
//     (Meta.Headers builds them, created_at formatted by FormatCreatedAt); an
//     event's own headers may not use those names (CheckHeader). Package outbox
//     refuses such an event when it is written, the relay fails a row that
//     carries one anyway, and package inbox deduplicates on HeaderEventID.
//   - Topics: ValidateTopic is Kafka's rule for a topic name, ValidateTopicTemplate
//     and Topic the relay's --topic-template (DefaultTopicTemplate), so a
//     producer's per-event topic is refused when it is written rather than
//     dead-lettered later.
//   - Schemas: DefaultSchema and the names ValidateSchema allows.
//   - Event states: State and the SQL condition of each (ReadySQL, FailedSQL, …;
//     see the table below), shared by the relay's queries, inspect's lists and
//     actions, the console and status. What is built on them (an aggregate's
//     head, a blocker, what waits behind one) is the read model's, in
//     internal/inspect's SQL files, not part of the contract.
//
// # Why a package of its own
//
// The contract used to be written three times: header names in the relay, the
// outbox package and the inbox package, topic rules in two of them, the default
// schema in three, and a test re-declared the relay's header format by hand. A
// producer, the relay and a consumer could drift apart without a compile error.
// It lives here, once, at the module root rather than under internal/ because
// applications read it (a consumer not written with package inbox matches the
// same header names) and inspect's public API names its State.
//
// It imports nothing but the standard library (a test enforces it), so the
// public packages outbox and inbox, which applications link, and the relay stay
// free of the migration library and its template dependencies (the relay used
// to import package migrations for DefaultSchema and ValidateSchema alone; a
// test keeps it off it).
//
// # Event states
//
// Each state is a SQL condition on an outbox_event row, written with bare column
// names so that it works on the table aliased or not:
//
//	published  published_at IS NOT NULL
//	failed     not published, failed_at IS NOT NULL (dead: out of attempts, an error
//	           that can never succeed, or parked by an operator)
//	leased     not published, not failed, lease_until > now()
//	ready      not published, not failed, not leased, available_at <= now()
//	scheduled  not published, not failed, not leased, available_at > now()
//	pending    ready + scheduled
//
// An expired lease (lease_token set, lease_until past) is claimable again: such a
// row is ready (or scheduled), and ExpiredLeaseSQL picks it out for display.
package wire
