-- The next batch to archive: the rows the target .where selects, oldest
-- published first, at most .limit (a parameter's mark).
SELECT event_id FROM {{.schema}}.outbox_event e WHERE {{.where}}
ORDER BY published_at LIMIT {{.limit}}
