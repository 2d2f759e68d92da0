-- The attempt history of the events $1 (outbox_attempt, at most 20 rows an
-- event), oldest first, by its primary key.
SELECT event_id::text, at, attempt, coalesce(lease_holder, ''), class, outcome, coalesce(error, ''),
    kafka_code, backoff_ms
FROM {{.schema}}.outbox_attempt WHERE event_id = ANY ($1::uuid[]) ORDER BY event_id, attempt_id
