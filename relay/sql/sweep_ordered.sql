-- The ordered sweep, the safety net for a hint that outlived its reason (a
-- blocking row deleted by hand, a race with a late writer): a blocked row that
-- is its aggregate's head is unblocked, and the claim takes its run from there.
-- It reads only blocked rows, through outbox_blocked_idx, $3 aggregates a
-- statement after the key ($1, $2), so that no statement runs long: a long one
-- would hold back the xmin horizon, and with it the cleanup of the index
-- entries the claim's window steps over, in exactly the hour that has many
-- blocked rows.
--
-- A head another session holds is left for the next sweep (SKIP LOCKED):
-- waiting for it, in no particular order, could deadlock.
--
-- $1 and $2 the last aggregate (type, id) the previous statement read ('' at
-- first), $3 how many aggregates to read.
-- Returns the aggregates read, the rows unblocked and the last aggregate's key.
WITH heads AS MATERIALIZED (
    SELECT DISTINCT ON (aggregate_type, aggregate_id) ctid AS tid, aggregate_type, aggregate_id, seq
    FROM {{.schema}}.outbox_event
    WHERE blocked AND published_at IS NULL AND (aggregate_type, aggregate_id) > ($1, $2)
    ORDER BY aggregate_type, aggregate_id, seq
    LIMIT $3
), held AS MATERIALIZED (
    -- Only the rows to unblock are locked: locking every blocked row read
    -- would write each of them once more (150,000 in a storm), every sweep.
    SELECT h.tid
    FROM heads h
    JOIN {{.schema}}.outbox_event l ON l.ctid = h.tid
    WHERE l.blocked AND l.published_at IS NULL
      AND NOT EXISTS (
          SELECT 1 FROM {{.schema}}.outbox_event p
          WHERE p.aggregate_type = h.aggregate_type AND p.aggregate_id = h.aggregate_id
            AND p.published_at IS NULL AND p.seq < h.seq)
    FOR UPDATE OF l SKIP LOCKED
), unblocked AS (
    UPDATE {{.schema}}.outbox_event AS e
    SET blocked = false
    FROM held h
    WHERE e.ctid = h.tid AND e.blocked AND e.published_at IS NULL
    RETURNING 1
)
SELECT (SELECT count(*) FROM heads), (SELECT count(*) FROM unblocked),
       coalesce(l.aggregate_type, ''), coalesce(l.aggregate_id, '')
FROM (SELECT 1) one
LEFT JOIN (SELECT aggregate_type, aggregate_id FROM heads ORDER BY aggregate_type DESC, aggregate_id DESC LIMIT 1) l ON true
