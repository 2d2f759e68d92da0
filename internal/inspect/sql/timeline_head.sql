-- The aggregate's ($1, $2) head: the seq of its first unpublished event.
SELECT min(seq) FROM {{.schema}}.outbox_event WHERE aggregate_type = $1 AND aggregate_id = $2 AND published_at IS NULL
