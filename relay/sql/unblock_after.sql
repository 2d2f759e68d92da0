-- Unblock after a mark: for the aggregates of a marked batch that had blocked
-- rows when it was claimed, their next blocked rows in seq order come back to
-- the claim window, $3 at most per aggregate (a batch's worth; the rest follow
-- run by run). Rows still behind a blocker are simply marked again by the next
-- claim that meets them.
--
-- The rows are locked first, in seq order, as the operator actions lock
-- theirs (migration 011): the two never deadlock each other.
--
-- The rows waiting are after the run (a blocked row inside it was claimed
-- with it), so each aggregate's scan of outbox_blocked_idx seeks past the run:
-- the entries before it, of rows unblocked earlier, stay while a long
-- transaction holds the xmin horizon.
--
-- $1 and $2 the aggregates (types, ids), $3 the most rows per aggregate, $4
-- the last seq of each aggregate's run.
WITH held AS MATERIALIZED (
    SELECT h.event_id
    FROM unnest($1::text[], $2::text[], $4::bigint[]) AS a(aggregate_type, aggregate_id, after)
    CROSS JOIN LATERAL (
        SELECT b.event_id FROM {{.schema}}.outbox_event b
        WHERE b.blocked AND b.published_at IS NULL
          AND b.aggregate_type = a.aggregate_type AND b.aggregate_id = a.aggregate_id AND b.seq > a.after
        ORDER BY b.seq
        LIMIT $3) b
    JOIN {{.schema}}.outbox_event h ON h.event_id = b.event_id
    WHERE h.blocked
    ORDER BY h.seq
    FOR UPDATE OF h
)
UPDATE {{.schema}}.outbox_event AS e
SET blocked = false
FROM held
WHERE e.event_id = held.event_id AND e.blocked
