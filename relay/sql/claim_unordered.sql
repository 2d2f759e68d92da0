-- The unordered claim (OrderNone): the oldest claimable events by
-- outbox_claim_idx (available_at, seq), locked SKIP LOCKED and leased in one
-- statement. It is the seed's claim less failed and blocked rows (blocked rows
-- exist only where an ordered relay ran; the unordered sweep clears them).
--
-- @batch batch size, @token lease token, @lease_ms lease in milliseconds,
-- @holder this relay's name (host:pid, kept in lease_holder); @from_at,
-- @from_seq, @xmax and @xip as in the ordered claim: the window reads from the
-- relay's position on, and behind it only the rows that transactions unseen by
-- the previous claim made claimable.
--
-- The candidates are read first, without locks (cand, materialized), then
-- each is locked by ctid in its own subquery as the limit takes it: a row
-- another transaction changed meanwhile is re-checked there alone, where a
-- lock on a join re-ran the candidates' scans for every such row (87 s beside
-- a relay claiming the same rows).
-- Returns the claimed rows, unordered (the relay sorts them by seq).
WITH cand AS MATERIALIZED (
    SELECT w.tid, w.available_at, w.seq FROM (
        (SELECT r.ctid AS tid, r.available_at, r.seq FROM {{.schema}}.outbox_event r
         WHERE /* claimable */ r.published_at IS NULL AND r.failed_at IS NULL AND NOT r.blocked
           AND r.available_at <= now()
           AND (r.lease_until IS NULL OR r.lease_until <= now()) /* /claimable */
           AND (r.available_at, r.seq) >= (@from_at::timestamptz, @from_seq::bigint)
         ORDER BY r.available_at, r.seq
         LIMIT 2 * @batch)
        UNION ALL
        (SELECT l.tid, l.available_at, l.seq FROM (
            -- By ready_xid only (outbox_ready_xid_idx, whose predicate names
            -- ready_xid so that no other read chooses it): the transactions
            -- from @xmax on, then each one of @xip.
            SELECT r.ctid AS tid, r.available_at, r.seq FROM {{.schema}}.outbox_event r
            WHERE r.ready_xid >= @xmax::xid8
              AND r.published_at IS NULL AND r.failed_at IS NULL AND NOT r.blocked
            UNION ALL
            SELECT r.ctid AS tid, r.available_at, r.seq
            FROM pg_catalog.unnest(@xip::xid8[]) AS x(xid)
            CROSS JOIN LATERAL (
                SELECT r.ctid, r.available_at, r.seq FROM {{.schema}}.outbox_event r
                WHERE r.ready_xid = x.xid
                  AND r.published_at IS NULL AND r.failed_at IS NULL AND NOT r.blocked
                OFFSET 0) r
            OFFSET 0) l
         WHERE (l.available_at, l.seq) < (@from_at::timestamptz, @from_seq::bigint)
         ORDER BY l.available_at, l.seq
         LIMIT 2 * @batch)) w
    ORDER BY w.available_at, w.seq
    LIMIT 2 * @batch
), picked AS (
    SELECT c.event_id
    FROM cand w
    CROSS JOIN LATERAL (
        SELECT c.event_id FROM {{.schema}}.outbox_event c
        WHERE c.ctid = w.tid
          AND /* claimable */ c.published_at IS NULL AND c.failed_at IS NULL AND NOT c.blocked
          AND c.available_at <= now()
          AND (c.lease_until IS NULL OR c.lease_until <= now()) /* /claimable */
        FOR UPDATE SKIP LOCKED) c
    LIMIT @batch
), claimed AS (
    UPDATE {{.schema}}.outbox_event AS e
    SET lease_token = @token, lease_until = now() + @lease_ms::float8 * interval '1 millisecond', attempts = e.attempts + 1,
        lease_holder = @holder::text
    FROM picked
    WHERE e.event_id = picked.event_id
    RETURNING e.event_id, e.seq, e.aggregate_type, e.aggregate_id, e.event_type,
        e.payload, -- The payload's size as JSON text, what the record carries; serialized
        -- only when it might matter: a stored (perhaps compressed) size under
        -- 1/1536 of @max_payload cannot make more than that as text (at most
        -- 256 times by decompression, 6 by escapes), and stands for it.
        CASE WHEN pg_catalog.pg_column_size(e.payload)::bigint * 1536 < @max_payload
             THEN pg_catalog.pg_column_size(e.payload)::bigint
             ELSE pg_catalog.octet_length(e.payload::text)::bigint END AS payload_bytes, e.created_at, e.attempts, e.topic, e.headers
)
SELECT c.event_id, c.seq, c.aggregate_type, c.aggregate_id, c.event_type,
    -- The payload within the claim's byte budget: as in claim_ordered.sql.
    CASE WHEN c.payload_bytes > @max_payload
              OR pg_catalog.sum(CASE WHEN c.payload_bytes <= @max_payload THEN c.payload_bytes ELSE 0 END)
                     OVER (ORDER BY c.seq ROWS UNBOUNDED PRECEDING) - c.payload_bytes >= @batch_bytes
         THEN NULL ELSE c.payload END AS payload,
    c.payload_bytes, c.created_at, c.attempts, c.topic, c.headers
FROM claimed c
