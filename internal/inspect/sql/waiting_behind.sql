-- The events of $1 (event ids) that wait behind their aggregate's head: the
-- aggregate's first unpublished event, when it comes before them and is failed
-- or scheduled. Returns each waiting event's id with its head: id, seq, state,
-- available_at, failed_at. One probe of outbox_aggregate_idx per event given.
SELECT w.event_id::text, h.event_id::text, h.seq,
       CASE WHEN h.failed_at IS NOT NULL THEN 'failed' ELSE 'scheduled' END,
       {{finite "h.available_at"}}, {{finite "h.failed_at"}}
FROM {{.schema}}.outbox_event w
CROSS JOIN LATERAL (
    SELECT e.event_id, e.seq, e.available_at, e.failed_at, e.lease_until, e.lease_token
    FROM {{.schema}}.outbox_event e
    WHERE e.aggregate_type = w.aggregate_type AND e.aggregate_id = w.aggregate_id AND e.published_at IS NULL
    ORDER BY e.seq
    LIMIT 1) h
WHERE w.event_id = ANY($1::uuid[]) AND w.published_at IS NULL AND h.seq < w.seq
  AND (h.failed_at IS NOT NULL OR (h.available_at > now() AND (h.lease_until IS NULL OR h.lease_until <= now())))
