-- Release: gives a whole batch back, its attempt refunded (the shutdown
-- timeout). Like renew it skips rows held by the batch's own mark or settle,
-- which end their lease anyway, so it cannot deadlock with them. A row an
-- operator parked while it was in flight keeps its attempts.
--
-- $1 the batch's lease token.
WITH held AS (
    SELECT event_id FROM {{.schema}}.outbox_event
    WHERE lease_token = $1 AND published_at IS NULL
    FOR UPDATE SKIP LOCKED
)
UPDATE {{.schema}}.outbox_event AS e SET lease_token = NULL, lease_until = NULL,
    attempts = CASE WHEN e.failed_at IS NOT NULL THEN e.attempts ELSE greatest(e.attempts - 1, 0) END
FROM held WHERE e.event_id = held.event_id
