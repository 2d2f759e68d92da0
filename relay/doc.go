// Package relay publishes committed outbox_event rows to Kafka at least once.
//
// # Pipeline
//
// A relay repeats claim → publish → mark:
//
//   - Claim: one short transaction picks up to BatchSize ready events (FOR UPDATE
//     SKIP LOCKED), gives them a fresh lease token, lease_until = now() + Lease,
//     attempts + 1 and lease_holder = Holder (this relay's "host:pid", so an
//     operator sees who holds a lease), and commits. No row lock is held while
//     Kafka is called. lease_holder is never cleared: once the lease ends it names
//     the last relay that claimed the row, on a published row the one that
//     published it.
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
// memory is bounded by BatchSize × InFlight events, and their payloads by
// BatchBytes × InFlight bytes: a claim loads payloads in seq order while they
// sum to BatchBytes (the first always) and none larger than MaxMessageBytes;
// the events it leaves out are released at once, their attempt refunded (in
// ordered mode with the later events of their aggregate), and claimed again.
// Batches that outlive half their lease get it renewed.
//
// # Failures
//
//   - An event that cannot succeed — larger than MaxMessageBytes (a payload that
//     alone is larger is never loaded), a topic name Kafka
//     rejects, an authorization failure — is failed at once: failed_at and
//     last_error are set and it stays until an operator retries or parks it.
//   - Any other per-event error clears the lease and schedules the event again at
//     now() + backoff(attempts) (exponential from BackoffBase, capped at BackoffMax,
//     jittered), with last_error set. After MaxAttempts the event is failed.
//   - A topic that does not exist is an operator's problem (create it, or
//     --kafka-auto-create-topics), not the event's: the event waits for it,
//     scheduled again with last_error beginning MissingTopicError and its
//     attempt refunded, and is never failed for it. Its backoff grows with the
//     batches that found the topic missing and is capped at 30 s, so a created
//     topic is used within that. A record to a topic already found missing
//     waits for Kafka 5 s at most, and not past the start of a shutdown: such
//     batches are released at once, and the relay exits within about a second.
//     The relay logs each missing topic once a minute and lists them in
//     Status().MissingTopics (and the outboxtop_relay_missing_topic* gauges).
//   - A broker outage is nobody's event's fault: when a batch fails and the brokers
//     do not answer a ping, the batch is released with its attempts refunded (and
//     last_error saying so) and the whole relay backs off until they answer. A
//     broker watch pings Kafka every second, so readiness follows it both ways
//     within a few seconds, idle or busy. However long the outage, no attempt is
//     burnt and nothing is failed.
//   - A row whose headers use a reserved name (event_id, event_type,
//     aggregate_type, aggregate_id, created_at) is failed with a last_error naming
//     it; the outbox package refuses such rows when they are written
//     (package wire holds the rule, with the header names). So is a row whose
//     header reads as a reserved name, the same under internal/ident's Key
//     (case, width, white space, invisible characters, a dotted or dotless i:
//     "Event_ID", "event_id ", "ｅｖｅｎｔ_ｉｄ", "EVENT_İD"), which a loose
//     consumer would take for the relay's; package outbox refuses those too.
//   - An event to a topic outside Config.Topics (--topics; by default, one of
//     the topics Kafka and its ecosystem keep for themselves: "__" names,
//     _schemas, "_confluent" names, Kafka Connect's connect-configs,
//     connect-offsets and connect-status) is failed at once with a last_error
//     naming the topic and the flag: a producer's topic column cannot reach
//     every topic the relay's credentials can.
//
// What becomes of each event of a batch is decided by a pure function (plan and
// decide in outcome.go, tested over every combination): every event with an error
// of its own ends with it as last_error; only an outage or a missing topic
// refunds an attempt; an
// event is marked only when every earlier event of its aggregate in the batch was
// acknowledged too.
//
// # Operator actions on leased events
//
// An operator may act on an event while a relay holds it; the relay honours it:
//
//   - park sticks: mark and settle leave a parked row parked (with the operator's
//     last_error) and only end its lease; a record Kafka acknowledged is then in
//     Kafka although the row is parked, and a retry publishes it again.
//   - skip (of a parked event) moves the row to the archive; the relay's statements
//     find nothing there and count a lost fence.
//   - retry (of a parked event) makes it ready at once; the old batch's outcome
//     finds its token gone and changes nothing.
//   - reset-lease ends the lease and keeps the token: the holder's outcome still
//     applies until another claim takes the event, after which it changes nothing.
//
// Row locks: the claim, renew, the shutdown release and the sweeps never wait
// for one (they skip rows another session holds: FOR UPDATE SKIP LOCKED). The
// unblock after a mark and the operator actions (outboxtop_lock_events) take their rows
// in seq order before changing any, so they cannot deadlock each other
// (TestActionsAndUnblockLockInSeqOrder). Mark and settle lock in their plan's
// order: an operator's action on a batch whose mark or settle is running can
// deadlock with it (a relay froze just after sending its mark, whose backend
// runs it, and the operator reset that batch's lease). PostgreSQL ends one of
// the two after deadlock_timeout (1 s) and each does it again: the relay retries
// its outcome statements, inspect.Inspector.Do its action. Taking the mark's
// rows in seq order first would prevent it, at a second lock per row: 10 ms per
// 1,000 events, the unordered drain down from 37–43k to 30–32k events/s.
//
// # A held horizon
//
// A transaction anywhere in the database that stays open (a report, pg_dump, a
// session idle in transaction, a prepared transaction, a replication slot no
// one reads) keeps PostgreSQL's xmin horizon: from then on no dead version the
// relay leaves can be removed, nor its index entries. A claim that read its
// indexes from their start re-read every row published since: at 1,500 events/s
// its cost grew by about 1 ms per second held, until the relay fell behind.
// So no claim reads from the start (cursor.go has the whole argument):
//
//   - the window starts at a position the relay keeps, the first row of
//     outbox_claim_idx that may still be claimed (ready, scheduled, leased);
//   - rows that land behind it (a late commit, a row retried or unblocked, a
//     lease given back) were made claimable by a transaction the previous
//     claim's snapshot did not see committed; the claim finds them through
//     ready_xid (set at insert, and by a trigger on those updates) and
//     outbox_ready_xid_idx, reading only those transactions' rows;
//   - the head probe and the run read outbox_aggregate_idx from the head the
//     relay last found for the aggregate, the waiters and the unblock after a
//     mark outbox_blocked_idx from the run on;
//   - only the first claim reads from the start. What the position cannot
//     see (a row another relay found behind this one's position and left
//     leased when it died) is given back by the rescue, a paced pass beside
//     the claims every two leases (sql/rescue.sql): its read does grow with
//     the horizon, but no claim waits for it.
//
// TestClaimCostDoesNotGrowWithAHeldHorizon holds a claim's buffers flat while
// thousands of events are published behind a held snapshot;
// TestRescueGivesBackExpiredLeasesBehindThePosition shows the gap the rescue
// closes. What stays: the first claim, the rescue and the sweeps (paced) and
// the dead versions themselves, which the table and its indexes keep until the
// horizon moves. The console's snapshot
// (package inspect) reads from positions of its own in the same way.
//
// # Per-aggregate order
//
// With OrderAggregate (the default), a later event of an aggregate is never
// published before every earlier one was acknowledged, across any number of relay
// processes. Order means seq order among the events a claim can see: an event
// whose transaction is still open is invisible, so one committed after it is
// published first, which is its commit order. seq order is commit order when
// writers serialize on the aggregate (the seed's UPDATE of the order row before
// its INSERT does). Where two events of an aggregate came from overlapping
// transactions and both were committed before a claim met them, which committed
// first is not recorded anywhere: beside each ordered batch's publish,
// sql/order_check.sql (consecutive events of the batch, and the last one's
// successor, read forwards, so a held xmin horizon costs it nothing) marks the
// later one unserialized (order unknown) from the inserting
// transaction and snapshot every row records (writer_xid, writer_snapshot),
// and the console and status count those aggregates. Writers that serialize on
// the aggregate are never marked. With the table's commit order enforced
// (migrate --commit-order enforce) the writers wait for each other and nothing
// is marked.
//
// The ordered claim is one statement, in sql/claim_ordered.sql (its header is
// the algorithm); the statements that keep its hint honest are
// sql/unblock_after.sql, sql/sweep_ordered.sql and sql/sweep_unordered.sql, run
// from ordered.go. In short:
//
//   - It reads a window of the oldest claimable rows (available_at, seq) from a
//     partial index that holds no failed, scheduled or blocked row, so trouble on
//     other aggregates costs it nothing, and at most 4 × BatchSize of them, so a
//     claim stays cheap when nearly every aggregate has a batch in flight. It
//     locks the window's rows as it keeps them (SKIP LOCKED): rows another claim
//     holds — a concurrent one, or one whose process froze mid-transaction — are
//     passed over and the window fills with rows nobody is taking.
//   - For each aggregate in the window it finds the head, the first unpublished
//     event in seq order. A ready head is the aggregate's lock: the claimer that
//     locks its row (FOR UPDATE SKIP LOCKED) and finds it still claimable claims
//     the run of consecutive claimable events that starts there; any other
//     claimer skips the aggregate. There is no global lock: claims of different
//     aggregates run in parallel in any number of relays, and no session can stop
//     them all.
//   - A head that is failed or scheduled blocks its aggregate; the claim marks
//     the waiting rows it saw blocked (a hint, the blocked column), so they
//     leave the window. The relay that publishes the blocker brings the next
//     rows back; an operator's skip does too; a periodic sweep (SweepInterval)
//     clears hints whose blocker vanished by other means. The hint never decides
//     order, only what the window reads. Rows behind a run in flight are only
//     skipped: they are next.
//
// A batch may carry a run of consecutive events of one aggregate — a hot aggregate
// moves a whole run per round trip, not one event — and they are produced in seq
// order to one partition. franz-go fails every buffered record of a partition when
// one of its produce batches fails, but a record handed to it after that failure
// starts afresh: an event can be acknowledged after an earlier one of its
// aggregate failed (TestFranzAcksLaterRecordAfterFailingEarlier). Such an event is
// not marked; it is released with a last_error and published again after the
// earlier one. Within a batch, an aggregate's run stops at an event that cannot be
// built or changes topic: the later events are released without an attempt and
// queue behind it.
//
// No relay statement waits for a lock without end: the claim never waits for a
// row lock at all (everything it locks is SKIP LOCKED), runs under LockTimeout
// for table locks, and a process that stops inside a claim transaction is ended
// by PostgreSQL after twice LockTimeout (idle_in_transaction_session_timeout), so
// its aggregates wait at most that long. A process that stops while PostgreSQL
// is still sending it the claim's result leaves its backend blocked in a write,
// which neither of those timeouts interrupts: the claim transaction also sets
// tcp_user_timeout to twice LockTimeout, so the kernel ends a connection whose
// data the process has not taken for that long
// (TestClaimResultUnreadIsEndedWithinTheBound: 2.5 s for a bound of 2 s; over 22 s
// and counting without it). The worst case is four times LockTimeout: the
// result fit, and only the message that ends the idle session did not. Over a
// Unix-domain socket there is no such timeout, and a stopped process holds
// those aggregates until it runs again or is killed. Other aggregates are not
// affected.
// An aggregate whose ready head some other session keeps locked waits for that
// session; the claim passes it over for a second at a time (else a hot
// aggregate's rows would fill every claim's window and stop the relay), and
// a head held past LockTimeout is reported: a log line,
// outboxtop_relay_heads_locked and Status.HeadsLocked
// (TestHeldHotHeadDoesNotStallOtherAggregates).
//
// OrderNone claims the oldest ready events (available_at, seq) without any of
// these checks, for throughput.
//
// # Wake-ups
//
// Nothing on the producer's path wakes the relay: no trigger, no NOTIFY (a
// NOTIFY from the producer's transaction makes every commit of the database
// queue on one lock). Instead the relay polls how many events were inserted —
// outboxtop_inserted(), the last value of the identity of seq, a sequence read
// that never touches the table — every 5 ms, and claims when it moves. The
// value moves when an insert draws its seq, before the insert's transaction
// commits, so a change is followed by more wake-ups 5, 20, 80, 300 and 1,000 ms
// after it, for a commit that comes a little later (wake.go). Otherwise the
// relay waits at most PollInterval, and sets a timer for the next available_at
// of scheduled events. The trade: about 200 small statements a second per
// relay, and an event whose transaction stays open more than a second after its
// insert is found by the poll, up to PollInterval after its commit.
//
// Delivery is at least once: an acknowledgement followed by a crash before the
// mark, or a lease lost to a slow publish, publishes the event again.
//
// # Heartbeat
//
// Every HeartbeatInterval (default 5 s) the relay writes its row in outbox_relay
// (migration 010) through outboxtop_relay_beat: its Holder, its state — running,
// paused, draining (Drain), broker-down (backing off as a whole), stopping (Run's
// context is cancelled, batches are finishing) — the events in its in-flight
// batches, and its version, ordering and batch size. The database stamps the time
// and the role. On a clean exit Run writes a last beat, "stopped"; a relay that is
// killed leaves its row as it was, and readers call it gone after 3 intervals
// (inspect.RelayGone). The heartbeat is its own goroutine with its own timeout
// (at most 2 s, at most one interval): it never holds up a claim or a mark, and a
// beat that fails — the database away, the grant missing, the schema not migrated,
// the holder name written by another database role — is counted
// (Metrics.HeartbeatFailures), logged at most once a minute, and never stops the
// relay. A negative interval turns the heartbeat off.
//
// # SQL
//
// Every statement of the pipeline (claim, mark, settle, renew, release, the
// blocked hint's upkeep, the drain's check) is a file in sql/, one statement a
// file, named for what it does, its header saying what it does and what its
// parameters are; statements.go embeds and loads them:
//
//	sql/claim_ordered.sql    the ordered claim (OrderAggregate)
//	sql/claim_unordered.sql  the unordered claim (OrderNone)
//	sql/claim_timeouts.sql   the claim transaction's lock and idle timeouts
//	sql/mark.sql             mark acknowledged events published
//	sql/settle.sql           schedule again, or fail, events not published
//	sql/renew.sql            extend a batch's lease
//	sql/release.sql          give a batch back (shutdown timeout)
//	sql/unblock_after.sql    bring back the rows behind a marked run
//	sql/sweep_ordered.sql    clear hints whose blocker is gone
//	sql/sweep_unordered.sql  clear every hint (OrderNone)
//	sql/next_scheduled.sql   when the next scheduled event is due
//	sql/drain_state.sql      whether a drain is done
//
// One file a statement, rather than files grouped by purpose, so that a
// statement's header documents that statement alone and a newcomer finds the
// ordered claim in one file. The statements name their tables
// {{.schema}}.outbox_event, filled with the quoted schema when a Relay is
// built (package internal/pgsql, the template mechanism inspect's statements
// and the migrations' functions share). Statements with more than three parameters take them by
// name (pgx.StrictNamedArgs: @token, @ids…); the others by position.
//
// The statements rely on no search_path, and run with the pool's: outboxtop's
// own pools set it to pg_catalog, pg_temp (internal/pgsql). A pool whose
// search_path holds a schema other roles may create in (public, before
// PostgreSQL 15) runs whatever they plant there that matches a call more
// exactly than the built-in (an array_agg(text) aggregate, a jsonb -> jsonb
// operator), as the relay's role: a service that embeds the relay gives it a
// pool of its own with search_path set so (example_test.go).
//
// The event states are defined once, as SQL conditions, in package wire. The
// health collector's statement is sql/table_tuples.sql; the wake-ups' is
// sql/inserted.sql, and the ordered claim's order check sql/order_check.sql.
//
// The claims restate ready (wire.ReadySQL), written out over their aliased
// rows so that each file reads on its own and, in the window, so that the
// query's own conditions visibly imply outbox_claim_idx's predicate
// (published_at IS NULL AND failed_at IS NULL AND NOT blocked), without which
// the planner does not read that index; every restatement is marked in the file,
// /* ready */ … /* /ready */ (also claimable: ready and not blocked; and
// unpublished ready: ready where the statement already reads only unpublished
// rows). The restatements are in sql/claim_ordered.sql (five) and
// sql/claim_unordered.sql (one), and TestReadyIsRestatedFaithfully checks each
// against wire's condition on rows of every combination of the columns; an
// unmarked available_at <= now() fails it. Elsewhere ready is written out in
// internal/inspect/sql/oldest_publishable.sql, beside its definition, and the states are
// restated by outboxtop_state (migrations/functions/outboxtop_state.sql) for the operator's
// actions (package inspect's TestStateFunctionIsWires checks it).
package relay
