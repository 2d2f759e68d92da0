-- Deletes up to $3 rows of consumer $1 consumed before $2, directly: for a
-- schema without the prune function.
DELETE FROM {{.schema}}.consumed_event WHERE consumer_name = $1 AND event_id IN (
	SELECT event_id FROM {{.schema}}.consumed_event
	WHERE consumer_name = $1 AND consumed_at < $2
	ORDER BY consumed_at LIMIT $3)
