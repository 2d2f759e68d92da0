-- The claim's next position, read in the claim's transaction after it: the
-- first row of outbox_claim_idx from the position @from_at, @from_seq on that
-- is still there (ready, scheduled or leased: anything that may be claimed
-- later, a lease that runs out included), and the first such row among those
-- that transactions unseen by the previous claim's snapshot (@xmax, @xip) made
-- claimable, wherever it lies. Both seek: the first reads only the entries of
-- rows published since the previous claim, the second only the unseen
-- transactions' rows. The relay starts the next window at the lower of the
-- two (claimCursor in cursor.go). Returns now() too: a position is never
-- later than the claim's start.
SELECT now(), p.available_at, p.seq, l.available_at, l.seq
FROM (SELECT 1) one
LEFT JOIN LATERAL (
    SELECT r.available_at, r.seq FROM {{.schema}}.outbox_event r
    WHERE r.published_at IS NULL AND r.failed_at IS NULL AND NOT r.blocked
      AND (r.available_at, r.seq) >= (@from_at::timestamptz, @from_seq::bigint)
    ORDER BY r.available_at, r.seq
    LIMIT 1) p ON true
LEFT JOIN LATERAL (
    -- OFFSET 0: through outbox_ready_xid_idx (a range, then one seek per
    -- transaction), not in order from the start of outbox_claim_idx.
    SELECT x.available_at, x.seq FROM (
        SELECT r.available_at, r.seq FROM {{.schema}}.outbox_event r
        WHERE r.published_at IS NULL AND r.failed_at IS NULL AND NOT r.blocked
          AND r.ready_xid >= @xmax::xid8
        UNION ALL
        SELECT r.available_at, r.seq
        FROM pg_catalog.unnest(@xip::xid8[]) AS x(xid)
        CROSS JOIN LATERAL (
            SELECT r.available_at, r.seq FROM {{.schema}}.outbox_event r
            WHERE r.published_at IS NULL AND r.failed_at IS NULL AND NOT r.blocked
              AND r.ready_xid = x.xid
            OFFSET 0) r
        OFFSET 0) x
    ORDER BY x.available_at, x.seq
    LIMIT 1) l ON true
