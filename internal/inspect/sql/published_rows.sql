-- The published rows, for a capped count.
SELECT 1 FROM {{.schema}}.outbox_event WHERE {{state "published"}}
