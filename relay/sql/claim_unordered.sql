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
-- Returns the claimed rows, unordered (the relay sorts them by seq).
WITH picked AS (
    SELECT w.event_id FROM (
        (SELECT r.ctid AS tid, r.event_id, r.available_at, r.seq FROM {{.schema}}.outbox_event r
         WHERE /* claimable */ r.published_at IS NULL AND r.failed_at IS NULL AND NOT r.blocked
           AND r.available_at <= now()
           AND (r.lease_until IS NULL OR r.lease_until <= now()) /* /claimable */
           AND (r.available_at, r.seq) >= (@from_at::timestamptz, @from_seq::bigint)
         ORDER BY r.available_at, r.seq
         LIMIT @batch)
        UNION ALL
        -- OFFSET 0 keeps the planner from reading these in order from
        -- outbox_claim_idx, from its start.
        -- Two scans of outbox_ready_xid_idx, each a seek: an OR of the two
        -- would read the whole index.
        (SELECT l.* FROM (
            SELECT r.ctid AS tid, r.event_id, r.available_at, r.seq FROM {{.schema}}.outbox_event r
            WHERE /* claimable */ r.published_at IS NULL AND r.failed_at IS NULL AND NOT r.blocked
              AND r.available_at <= now()
              AND (r.lease_until IS NULL OR r.lease_until <= now()) /* /claimable */
              AND r.ready_xid >= @xmax::xid8
            UNION ALL
            SELECT r.ctid AS tid, r.event_id, r.available_at, r.seq FROM {{.schema}}.outbox_event r
            WHERE /* claimable */ r.published_at IS NULL AND r.failed_at IS NULL AND NOT r.blocked
              AND r.available_at <= now()
              AND (r.lease_until IS NULL OR r.lease_until <= now()) /* /claimable */
              AND r.ready_xid = ANY (@xip::xid8[])
            OFFSET 0) l
         WHERE (l.available_at, l.seq) < (@from_at::timestamptz, @from_seq::bigint)
         ORDER BY l.available_at, l.seq
         LIMIT @batch)) w
    JOIN {{.schema}}.outbox_event c ON c.ctid = w.tid
    WHERE c.published_at IS NULL AND c.failed_at IS NULL AND NOT c.blocked
      AND (c.lease_until IS NULL OR c.lease_until <= now())
    ORDER BY w.available_at, w.seq
    LIMIT @batch
    FOR UPDATE OF c SKIP LOCKED
)
UPDATE {{.schema}}.outbox_event AS e
SET lease_token = @token, lease_until = now() + @lease_ms::float8 * interval '1 millisecond', attempts = e.attempts + 1,
    lease_holder = @holder::text
FROM picked
WHERE e.event_id = picked.event_id
RETURNING e.event_id, e.seq, e.aggregate_type, e.aggregate_id, e.event_type,
    e.payload, e.created_at, e.attempts, e.topic, e.headers
