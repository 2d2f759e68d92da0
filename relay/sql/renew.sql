-- Renew: extends a batch's lease. It skips rows another statement holds (the
-- batch's own mark or settle, an operator's action, a claim of an expired row)
-- instead of waiting for them: it never waits, so it can never be part of a
-- deadlock. A skipped row is renewed on the next tick.
--
-- $1 the batch's lease token, $2 the lease in milliseconds.
WITH held AS (
    SELECT event_id FROM {{.schema}}.outbox_event
    WHERE lease_token = $1 AND published_at IS NULL AND failed_at IS NULL
    FOR UPDATE SKIP LOCKED
)
UPDATE {{.schema}}.outbox_event AS e SET lease_until = now() + $2::float8 * interval '1 millisecond'
FROM held WHERE e.event_id = held.event_id
