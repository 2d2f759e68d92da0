-- The unordered sweep clears the blocked hint, $1 rows a statement: without
-- ordering nothing waits. Rows another session holds are left for the next
-- sweep (waiting for them, in no particular order, could deadlock).
UPDATE {{.schema}}.outbox_event SET blocked = false
WHERE event_id IN (
    SELECT event_id FROM {{.schema}}.outbox_event WHERE blocked AND published_at IS NULL LIMIT $1
    FOR UPDATE SKIP LOCKED)
