-- The archived rows that were never published (skipped).
SELECT count(*) FROM {{.schema}}.outbox_event_archive WHERE published_at IS NULL
