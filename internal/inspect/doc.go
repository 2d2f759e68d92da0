// Package inspect is the read model of the outbox and its audited triage actions.
// The console (internal/console), the command line (status, events, retry, …) and the relay's
// retention all go through it; each owns no SQL of its own about the outbox's state.
//
// # Reading
//
// An Inspector is made once per pool and schema:
//
//	in, err := inspect.New(pool, "public")          // or inspect.New(pool, schema, inspect.ReadOnly())
//	snap, err := in.Snapshot(ctx)                    // the Overview: counts, ages, rates, blocked, health
//	page, err := in.List(ctx, inspect.ListOptions{   // one view's rows, keyset-paginated
//		State:  wire.Failed,
//		Filter: inspect.Filter{EventType: "OrderPlaced"},
//		Limit:  50,
//	})
//	next, err := in.List(ctx, inspect.ListOptions{State: wire.Failed, After: page.Next, Limit: 50})
//	ev, err := in.Detail(ctx, id)                    // every column, payload, headers, inbox rows
//
// States are wire's, evaluated by PostgreSQL's clock (now()) with wire's SQL
// conditions, never re-derived here. Archived (rows in outbox_event_archive) is listed
// like a state but is not one of the outbox's states.
//
// # Cost on a big table
//
// A Snapshot must stay cheap with millions of published rows and in an incident
// (a million failed events, hundreds of thousands scheduled), so it reads a bounded
// number of rows one by one and never scans published history:
//
//   - the unpublished rows that are not failed, in the relay's order (seq), at most
//     5,000: their states, attempts, types, leases by relay, and their aggregates;
//     the heads of the 1,000 aggregates with the most ready rows among them are
//     probed (one read of outbox_aggregate_idx each): their ready rows wait
//     (Counts.Waiting; the waiting fragment of sql/fragments.sql) when the head is failed or scheduled, and
//     are publishable otherwise;
//   - past that scan, three index ranges that hold each such row once whatever the
//     relay's blocked hint says (outbox_claim_idx, outbox_blocked_idx, and
//     outbox_ready_idx past now()), counted up to 5,000 rows each, and the ready
//     rows among the first two grouped by aggregate and probed likewise;
//   - the failed rows, an index-only count of outbox_failed_idx up to 250,000 (an
//     incident of 200,000 failures reads exact, as the relay's /metrics does), and
//     the newest 1,000 for the groups by type and error (Snapshot.FailedGroupsOf
//     and FailedGroupsCover say when they cover only these: a group's count is
//     then of the newest, never a total, and every text that prints one says so);
//   - the oldest 2,000 failures and the soonest 2,000 retries, asked whether they
//     head their aggregate, for the blocked aggregates beside those the probes found;
//   - for the blocked list, when the scan did not read every not failed row: the
//     rows hinted blocked, up to 100,000 (index-only), and the ready rows not
//     hinted, up to 20,000, grouped by aggregate, and the heads of up to 50,000
//     of those aggregates (see "The blocked list").
//
// The relays seen (Snapshot.Relays) cost no extra read of outbox_event: their
// heartbeats come from outbox_relay (at most RelaysLimit rows, a table the relays
// keep small), and the live leases by holder are counted in the scan above.
// No index names a lease column — one would make every claim a non-HOT update — so
// past the scan a relay's leases are at least the number shown (LeasesApprox); its
// InFlight, which the relay reports in its heartbeat, does not depend on the scan.
// A heartbeat not written for RelayGoneAfter intervals is "gone".
//
// The oldest pending and ready ages are the oldest among the rows the pass
// and the three ranges read: exact when they read every unpublished, not
// failed row, else a lower bound (Snapshot.OldestPendingBound,
// OldestReadyBound; "≥" in text). No index orders those rows by created_at,
// so no probe finds the oldest past the ranges' caps; the claim's first row
// (outbox_claim_idx) is among the first range's. TestOldestAgesHoldTheirBounds
// checks them against brute force with created_at unrelated to seq.
//
// Below those bounds every count is exact. Past them a count is never an estimate
// from the planner's statistics, which can be arbitrarily stale: it is the rows
// counted, marked as a lower bound (Bound, in Counts.Bounds and Blocked.Bound;
// "≥" in text), or, for Publishable beside an exact Ready and a lower-bound
// Waiting, Ready − Waiting, an upper bound ("≤"). Each is a bound that holds:
// TestSnapshotFiguresHoldTheirBounds checks every figure against brute-force
// counts on generated tables on both sides of every cap. Snapshot.Partial says the
// breakdowns (ByEventType, Attempts) cover the rows read. The blocked count is
// exact when the scan read every not failed row, every aggregate of them was
// probed and every failed row was asked; else it is the blocked aggregates found.
// The blocked list's figures (BlockedAggregate.Waiting, FailedBehind, Behind)
// are counted exactly, and its order is a ranking of every blocked aggregate,
// not of a sample, as far as Blocked.Ranked says (see "The blocked list").
//
// Backlog runs the same counting steps, and only them, in a transaction of its
// own: the same table gives the same counts and bounds as a Snapshot, and it
// reads outbox_event alone (the relay's role may; the relay's /metrics export
// it). It does not list the blocked aggregates, so its blocked count lacks the
// blockers only the list's ranking meets: never above a Snapshot's, exact when
// a Snapshot's is.
//
// The published and archived totals, the published windows (1 m, 5 m, 1 h) and
// inbox totals are exact while small and become estimates past a cap, marked "~":
// totals from the planner's row estimate, never below the rows counted before the
// cap (10,001, and the published rows counted in the hour; an inbox total never
// below its exact last 5 minutes). The windows are read from the newest 20,000
// rows of the hour along outbox_published_idx, an index range read whatever the
// history; a window those rows do not reach back over is an estimate held to
// both its bounds: never below the rows counted in it (Count.AtLeast), never
// above the published total (the table's rows: exact up to 10,000, else as
// above) nor a longer window; between them, the newest rows' rate over the part
// of the window that has any history (a burst of the newest rows extrapolated
// alone to more than the table held). Such numbers are a Count whose Estimate
// field says so, in Go and in JSON; TestPublishedWindowsHoldTheirBounds checks
// them against brute-force counts on generated histories (bursts, old, recent).
// Last10s is exact unless the newest 20,000 rows are all younger than 10 s;
// then it is their count, a lower bound (PublishedRecent.Last10sBound).
//
// The per-event reads are index reads however long the history: an aggregate's
// timeline (Timeline) reads its unpublished, published and archived rows along
// three indexes by (aggregate_type, aggregate_id, seq), the audit rows of one
// event (Trace, AuditLog with EventID) the GIN index on event_ids (migration 009;
// TestTimelineAndAuditQueriesUseIndexes checks the plans on tens of thousands of
// rows).
//
// A filter that searches inside payloads or headers (Filter.Payload,
// Filter.Headers; payload.go has the syntax) is the one read no index of the
// schema serves: an index on those columns would cost every producer's insert.
// A List asks the planner first: when it would read a GIN index the operator
// added (docs/triage.md gives the statements), the page is the plain query,
// sent as a one-shot statement so that it is planned for its values. Otherwise
// it reads at most ListOptions.MaxScan rows of the state (DefaultMaxScan,
// 100,000, about 0.1 s) in the list's order from the cursor, and Page.Scan
// says how many it read and whether it stopped there; Next then continues the
// search. CountMatching counts the matches among the first DefaultMaxScan rows,
// a lower bound past them. The actions are not bounded: their target is every
// match.
//
// # The blocked list
//
// Blocked.Aggregates is the BlockedLimit (20) blocked aggregates with the most
// ready events waiting behind their blocker, then the oldest blocker (seq), and
// Blocked.Ranked says how many of its first ones are certainly the first of
// every blocked aggregate: the console's and status's first line, the one
// Enter Enter opens, is the true worst whenever Ranked is 1 or more, and every
// line is ranked (Blocked.AllRanked; Heading says which in text) whenever the
// snapshot knew every aggregate with a ready row, which is when
//
//   - the scan read every unpublished, not failed row (each aggregate's ready
//     rows counted, the heads of the 1,001 with the most probed; with more
//     aggregates than that, one ranks for certain when it has more waiting
//     than the last of them has ready rows), or
//   - past the scan, at most 100,000 rows are hinted blocked and at most 20,000
//     ready rows are not: the relay has hinted every waiting row but those
//     20,000 (a live relay hints a waiting row within a claim of its reaching
//     the claim window, so what it has not hinted is the backlog it has not
//     reached), and the aggregates that may rank were asked (below).
//
// An aggregate's waiting events are its ready rows (behind a blocking head;
// the head is not ready), so one without a ready row has none waiting and one
// with ready rows at most as many as it has: its rows hinted blocked, in any
// state (outbox_blocked_idx, read index-only: the heap only for pages not all
// visible since the relay hinted their rows), plus its ready rows not hinted
// (outbox_claim_idx up to now()). Those two ranges hold every ready row once,
// whatever the hint says, so their sum bounds each aggregate's waiting events,
// and an aggregate in neither has none. The ranking (blockedrank.go) asks
// these candidates, the largest bound first, for their head (one probe of
// outbox_aggregate_idx each, a batch at a time) and, for those whose head
// blocks and that may still rank, counts their waiting events exactly; it
// stops when the next bound is below the 20th count (an equal one may still
// rank, by an older blocker: a tie at the 20th is asked in full). At most
// 50,000 are asked; past that, the list is ranked as far as its counts exceed
// the bound of the first not asked. With fewer than 20 aggregates with events
// waiting, the list goes on with those with none, oldest blocker first, ranked
// when every blocker was found (Blocked.Bound exact). Past either read's cap
// an aggregate not read may have any number waiting: Ranked is 0, the list is
// the most found among the candidates read (the first 1,000 asked), and
// Heading says "of those found" (the console: "most found, not ranked").
// TestSnapshotFiguresHoldTheirBounds checks Ranked's prefix against the
// brute-force ranking on generated tables on both sides of every cap;
// TestIncidentBlockedRanked and BenchmarkSnapshotBlockedIncident put the worst
// blocker oldest, in the middle and newest in every order the snapshot reads
// (seq, failed_at, the retries' available_at, the aggregates' order, the ready
// rows' available_at), failed or scheduled, hinted or not.
//
// It costs the relay nothing and producers nothing: no index, trigger or
// statement of theirs changes. The alternative, a table of blocked rows by
// aggregate kept by row triggers that fire only when blocked changes (no
// insert trigger), was measured and not taken: 24-45 µs a flipped row (12-22
// ms for the 500 rows one claim's blocking update marks, beside that update's
// 38-55 ms), two relays' claims would update the same aggregates' rows in
// different orders (deadlocks), and the table, read whole, would still have to
// be checked against the heads and the rows not hinted, as the ranking does.
// Its cost is the two ranges and 4 buffers a candidate asked, every one whose
// bound reaches the 20th count. On BenchmarkSnapshotBlockedIncident's
// 1,000,000 failures, 100,005 blocked aggregates, with the 20th in a tie of
// 12,000 aggregates with one event waiting, the snapshot took 0.38-0.45 s
// (median; 0.17-0.22 s before, when it listed from a sample and missed the
// worst once the relay had hinted nothing), with a tie of 30,000 0.78 s (the
// ranges: 29,000 rows hinted and 7,000 not, 2,400 buffers, or 29,000 while the
// hinted rows' pages are not all visible), on a 2-core machine shared with
// other work (load average 1-2.5; 0.7-2.1 s at 7-10). Its reads past the scan
// start at each range's start: behind a held horizon they step over the dead
// entries of rows published or unblocked since, as the counts past the scan do
// (only the pass reads from its floor; see "A held horizon"): the candidates'
// 2,400 buffers became 59,700 once 100,000 events were published behind a
// held snapshot.
//
// # A held horizon
//
// While a long transaction holds the xmin horizon, no dead version of a row
// published since can be removed, nor its index entries, and a read from the
// start of outbox_claim_seq_idx or of an aggregate's outbox_aggregate_idx
// entries steps over all of them again: a Snapshot's cost grew with the time
// held (13.5 ms, then 114.6 ms after 300,000 events published behind a held
// snapshot, BenchmarkSnapshotHeldHorizon). A long-lived Inspector (the console,
// the relay's /metrics) keeps what its previous pass saw and reads only what
// can have changed since (floor.go has the whole argument):
//
//   - rows that became unpublished, or not failed, since (an insert, a
//     retry) were written by a transaction the previous snapshot did not see
//     committed, and carry it in ready_xid: the pass looks up exactly those
//     transactions' rows through outbox_ready_xid_idx and, for failed and
//     blocked rows, outbox_stopped_xid_idx (PgQ's batch rule);
//   - every other unpublished, not failed row was seen before: when the
//     previous pass read all of them (below the scan cap) each is looked up
//     again by seq and no range is read; when it did not, the pass reads from
//     the first row it found on (seq only grows);
//   - heads are probed from the head found before, lowered to any late row
//     of the aggregate, and the blockers' head test starts there too.
//
// A new Inspector reads from the start once; the one-shot status has no
// previous pass, so its cost still grows with a held horizon. TestSnapshotCostDoesNotGrowWithAHeldHorizon holds the
// pass's and the blockers' buffers flat (1,231 and 1,235) while 2,000 and then
// 20,000 events are published behind a held snapshot; read from the start they
// take 1,740 and 15,137. TestSnapshotFromItsFloorFollowsTheTable checks every
// figure against brute force on a table that changes between snapshots, late
// commits below the position included.
//
// # Acting
//
// Every action takes a Request: an Action, a target (explicit event ids, a Filter, or
// both), and optionally From, the state the operator saw. DryRun counts the rows the
// action would touch; Do performs it and writes exactly one outbox_audit row. Do
// reads the ids the target selects and hands them to the action's function in the
// database (migrations/functions/: SECURITY DEFINER, owned by the migrating role), which
// re-checks each row's state, changes only those rows and writes the audit row in
// the same transaction. An operator's role needs EXECUTE on those functions and no
// write privilege on any table, so no action can bypass the audit. A row that
// changed state between listing and acting (published, claimed, retried by someone
// else) is left alone and not counted: fencing to the state the operator saw.
//
//	retry        failed or scheduled → ready now; failed ones get attempts = 0 and
//	             failed_at cleared (last_error is kept as history until the next try).
//	reset-lease  leased → claimable now (lease_until = now()). The holder may still
//	             publish and even mark the event: a duplicate, which consumers' inboxes
//	             absorb. Use it when a relay died holding a long lease.
//	park         ready, scheduled or leased → failed on purpose, last_error =
//	             "parked by <actor>: <reason>". Parking unblocks nothing: a failed event
//	             still holds back the later events of its aggregate.
//	skip         the event that blocks an aggregate (its oldest unpublished event, when
//	             failed or scheduled) is moved to outbox_event_archive with failed_at
//	             set and last_error "skipped by <actor>: <reason>" — out of the outbox,
//	             so the aggregate's later events flow. Replay brings it back.
//	archive      published → outbox_event_archive, in batches of BatchSize, each its
//	             own short transaction; never one giant transaction. The first batch
//	             writes the audit row and each later one adds its rows to it.
//	replay       published or archived events back into the outbox, ready now, at the
//	             end of their aggregate's order (a new seq), in their original order.
//	             Without NewID the event keeps its event_id: consumers that already
//	             applied it skip it (their inbox has the id), which suits re-filling a
//	             topic or feeding a new consumer; replay_of is set to the event's own id
//	             and created_at is kept. With NewID a new event is inserted with a fresh
//	             event_id, created_at = now() and replay_of = the original's id, and the
//	             original is left where it is: every consumer applies it again.
//
// TerminateBackend ends a backend that holds the xmin horizon (Horizon)
// through outboxtop_audit_terminate, which sends pg_terminate_backend itself,
// only while the pid's backend_start and xact_start are the ones read, and
// writes the audit row only once the backend has exited: a caller cannot audit
// a termination that never happened. Who may end whom is PostgreSQL's rule
// (pg_signal_backend or the same role, never a superuser's backend), which the
// function applies to the session's login role before signalling as its owner.
//
// A read-only Inspector refuses Do (and the retention helpers) with ErrReadOnly;
// reading and DryRun still work. Park and skip need a Reason (ErrReasonRequired).
// Retry, reset-lease, park, skip and replay refuse an empty target (ErrNoTarget) so a
// missing flag never means "every event"; Filter.All says that on purpose.
//
// The actor recorded in the audit row is Request.Actor, else DefaultActor: the OS
// user plus the SSH client address from SSH_CONNECTION.
//
// An action locks its events in seq order before changing any (outboxtop_lock_events),
// so two actions cannot deadlock each other. One can still deadlock with a
// session that takes the same rows in another order (a relay's mark of a batch
// in flight, someone's own SQL): PostgreSQL rolls the action back, audit row
// and all, and Do runs it again (three attempts in all). A lock it waits for past
// the session's lock_timeout (ActionLockTimeout for the CLI and the consoles),
// or a deadlock every time, is ErrRowsLocked: nothing was changed.
//
// # Paced runs
//
// Do changes every event of its target in one transaction. A paced run
// (NewRun, then Run.Do) does retry, reset-lease or replay over a target in
// chunks instead, so that a million retried events do not reach the relay
// and the consumers behind it at once:
//
//	run, err := in.NewRun(ctx, inspect.PacedRequest{Request: req, Rate: 500, Max: 10000})
//	defer run.Close()
//	res, err := run.Do(ctx, func(p inspect.Progress) { … })   // p.Done, p.Total, p.Rate, p.ETA
//	run, err = in.ResumeRun(ctx, run.ID(), inspect.ResumeOptions{Actor: "bob"})
//
// NewRun reads the run's window: the events the target selects and the
// highest seq among them. Do reads the events left in the window once, in seq
// order, and hands them to the action's function a chunk at a time (Chunk,
// by default a second's worth at Rate, at most MaxChunk = AuditIDLimit so the
// audit row names every event it changed), each chunk in a transaction of its
// own that first selects the chunk's events again by id with the target's
// conditions (state and filter: an event that changed since it was read is
// left alone, as in Do). A chunk's audit row is written by the function, in
// that transaction, and carries in its filter, beside the request's, the run:
// {"run": {"id", "cursor", "upto", "n", "rate", "max", "chunk"}}, where cursor
// is the seq of the chunk's last event and n the events it covers. The
// changes and the cursor commit together or not at all, so an interrupt at
// any point (a cancelled context, a lost connection, kill -9) leaves the run
// exactly where its last recorded chunk ends. ResumeRun reads those rows
// (through outbox_audit_at_idx from the time in the run's id, and only the
// caller's database login's rows, db_user), takes the action, target,
// states, reason and window from them, and Do goes on after the highest
// cursor. The pacer (pacer) starts each chunk no sooner than its events'
// share of the rate after the one before and never makes up lost time with
// a burst; Clock is injected, so its tests move time by hand.
//
// Nothing is done twice by a run: the cursor only grows, and what is below
// it is never read again. A retried event keeps its seq, so one that failed
// again after the run retried it is below the cursor and stays failed.
// Replay gives an event a new seq, past the window's end (seq only grows),
// and a copy under a new id a new seq too; both tables' seq are one order
// (the archive keeps the seq a row had), so replay's window spans the outbox
// and the archive and a replayed event, even published again meanwhile,
// never comes back in. A session advisory lock on the run's id, held by the
// connection the chunks go through, keeps two sessions from doing one run
// at once (ErrRunBusy). A chunk none of whose events still qualifies calls
// nothing and writes no row; the next row's n covers it.
//
// The run's rows are evidence, not authority: the filter column is what the
// caller passed the function (roles with EXECUTE can call it with any
// filter), so a role can write rows naming a run of its own with any cursor.
// That steers only the resumes of that database login's runs (ResumeRun
// reads no other login's rows), and a role able to write them can call the
// action on those events directly anyway: a forged cursor makes a resume
// skip or take events its caller could skip or act on. No new privilege
// comes with runs: the chunks go through the same functions as Do.
//
// # Retention
//
// ArchiveOlderThan and DeleteArchivedOlderThan are for the relay's --archive-after
// and --archive-retention: batched, no audit row (they are policy, not an operator's
// act). Skipped events in the archive are never deleted by retention.
//
// # SQL
//
// Every statement is a file of its own in sql/, named for what it reads, with
// a header that says so and what its parameters are; sql/fragments.sql holds
// what several share (an event's select list, its state as a CASE, whether a
// row heads, blocks or waits in its aggregate, the consumers' skip scan). They
// are templates (internal/pgsql): {{.schema}} is the quoted schema,
// {{state "ready"}} and the others are wire's state conditions, and finite,
// age and nullAge read a time column that may hold an infinite value. A few
// take fields chosen at run time, never from user text: an operator's filter
// is a WHERE clause built by filter.go from fixed fragments, its values passed
// as parameters, and a list's sort is one of the Sort values. The files are
// parsed once per Inspector; TestEveryStatementPreparesInAQuotedSchema
// prepares each in a schema whose name needs quotes, with no outboxtop table
// on the search_path, and fails on a file no code names.
//
// The Go beside them:
//
//	snapshot.go     Snapshot: counts, ages, rates, failed groups, blocked aggregates, inbox, health
//	snapcounts.go   the Snapshot's counting steps: unpublished, failed, blocked
//	blockedrank.go  the blocked list's ranking: its candidates, heads and counts, Ranked
//	backlog.go      Backlog: those steps alone (outbox_event only), for /metrics
//	list.go         List and CountMatching (keyset pages, capped counts)
//	filter.go       Filter's WHERE clause, with its arguments
//	payload.go      the payload and header terms: syntax, jsonpath and jsonb parameters
//	search.go       List and CountMatching of a payload search: the index check, the bounded scan
//	event.go        Event and how a row of the select list is read
//	detail.go       Detail: one event, its inbox rows, its replays
//	aggregate.go    Timeline: one aggregate's events in seq order, its blocker
//	trace.go        Resolve (id prefixes) and Trace: an event's audit rows
//	audit.go        AuditLog: the audit trail, filtered
//	actions.go      DryRun and Do (the targets), AuditRelay
//	paced.go        NewRun, ResumeRun, Run.Do: paced runs in chunks, resumable
//	publishable.go  OldestPublishableAge
//	horizon.go      Horizon: what holds back the xmin horizon (the Snapshot's Health.Horizon)
//	terminate.go    TerminateBackend: end a backend holding it, audited
//	retention.go    ArchiveOlderThan, DeleteArchivedOlderThan
//	inspect.go      capped counts and the planner's estimates
//	statements.go   the files, and the functions their templates call
//
// The actions and retention run the schema's functions, defined with their
// audit rows in migrations/functions/; outboxtop_state.sql there restates
// wire's states in SQL for them (TestStateFunctionIsWires checks it against
// wire).
package inspect
