-- What decides the topic of the events that wait to be published, for
-- `outboxtop status` with brokers, which asks them which of those topics exist:
-- each row's topic column, else its aggregate_type and event_type (the
-- relay's topic template makes the topic of them). Bounded whatever the table
-- holds, three windows of at most @window rows each, a row in several counted
-- once: the oldest unpublished, not failed events in seq order
-- (outbox_claim_seq_idx), the next the claim takes (outbox_claim_idx, in its
-- order), and the soonest scheduled (outbox_ready_idx past now(); failed rows
-- read there are not counted).
--
-- @window the events read in each window.
-- Returns the topic column ('' when none), aggregate_type, event_type, the
-- events read with them and the latest available_at among them.
SELECT coalesce(w.topic, ''), w.aggregate_type, w.event_type, count(*)::bigint, max(w.available_at)
FROM (
    (SELECT e.seq, e.topic, e.aggregate_type, e.event_type, e.available_at, e.failed_at
     FROM {{.schema}}.outbox_event e
     WHERE e.published_at IS NULL AND e.failed_at IS NULL
     ORDER BY e.seq
     LIMIT @window)
    UNION
    (SELECT e.seq, e.topic, e.aggregate_type, e.event_type, e.available_at, e.failed_at
     FROM {{.schema}}.outbox_event e
     -- outbox_claim_idx up to now(): due events, leased or not (not ready,
     -- which a live lease would exclude; the lease does not matter here)
     WHERE e.published_at IS NULL AND e.failed_at IS NULL AND NOT e.blocked AND e.available_at <= pg_catalog.now()
     ORDER BY e.available_at, e.seq
     LIMIT @window)
    UNION
    (SELECT e.seq, e.topic, e.aggregate_type, e.event_type, e.available_at, e.failed_at
     FROM {{.schema}}.outbox_event e
     WHERE e.published_at IS NULL AND e.available_at > now()
     ORDER BY e.available_at, e.created_at, e.event_id
     LIMIT @window)) w
WHERE w.failed_at IS NULL
GROUP BY 1, 2, 3
