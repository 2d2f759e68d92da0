-- The archived rows, for a capped count.
SELECT 1 FROM {{.schema}}.outbox_event_archive
