-- What waits behind the aggregate's ($1, $2) blocker at seq $3: how many
-- unpublished events, and the oldest one's created_at.
SELECT count(*), {{finite "min(created_at)"}} FROM {{.schema}}.outbox_event
WHERE aggregate_type = $1 AND aggregate_id = $2 AND published_at IS NULL AND seq > $3
