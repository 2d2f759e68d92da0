-- The unordered sweep clears the blocked hint, $1 rows a statement: without
-- ordering nothing waits.
UPDATE {{.schema}}.outbox_event SET blocked = false
WHERE event_id IN (
    SELECT event_id FROM {{.schema}}.outbox_event WHERE blocked AND published_at IS NULL LIMIT $1)
