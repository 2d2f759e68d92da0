-- The failed rows, counted up to $1, in outbox_failed_idx's order.
SELECT count(*) FROM (SELECT 1 FROM {{.schema}}.outbox_event WHERE {{state "failed"}} ORDER BY failed_at, seq LIMIT $1) f
