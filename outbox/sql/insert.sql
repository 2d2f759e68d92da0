-- One event: $1 event_id, $2 aggregate_type, $3 aggregate_id, $4 event_type,
-- $5 payload, $6 topic, $7 headers, and $8 when it may be published (NULL:
-- now).
INSERT INTO {{.schema}}.outbox_event
	(event_id, aggregate_type, aggregate_id, event_type, payload, topic, headers, available_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8::timestamptz, now()))
