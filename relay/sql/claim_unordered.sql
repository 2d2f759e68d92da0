-- The unordered claim (OrderNone): the oldest claimable events by
-- outbox_claim_idx (available_at, seq), locked SKIP LOCKED and leased in one
-- statement. It is the seed's claim less failed and blocked rows (blocked rows
-- exist only where an ordered relay ran; the unordered sweep clears them).
--
-- $1 batch size, $2 lease token, $3 lease in milliseconds, $4 this relay's name
-- (host:pid, kept in lease_holder).
-- Returns the claimed rows, unordered (the relay sorts them by seq).
WITH picked AS (
    SELECT event_id FROM {{.schema}}.outbox_event
    WHERE /* claimable */ published_at IS NULL AND failed_at IS NULL AND NOT blocked
      AND available_at <= now()
      AND (lease_until IS NULL OR lease_until <= now()) /* /claimable */
    ORDER BY available_at, seq
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
UPDATE {{.schema}}.outbox_event AS e
SET lease_token = $2, lease_until = now() + $3::float8 * interval '1 millisecond', attempts = e.attempts + 1,
    lease_holder = $4::text
FROM picked
WHERE e.event_id = picked.event_id
RETURNING e.event_id, e.seq, e.aggregate_type, e.aggregate_id, e.event_type,
    e.payload, e.created_at, e.attempts, e.topic, e.headers
