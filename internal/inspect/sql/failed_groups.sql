-- The newest .limit failed rows, grouped by event type, attempts bucket and
-- error, read in outbox_failed_idx's order. The limit is written into the
-- statement, not passed: the plan is the one for that many rows.
SELECT event_type, {{attemptsBucket}}, left(coalesce(last_error, ''), 200), count(*)
FROM (SELECT event_type, attempts, last_error FROM {{.schema}}.outbox_event WHERE {{state "failed"}}
	ORDER BY failed_at DESC, seq DESC LIMIT {{.limit}}) f
GROUP BY 1, 2, 3
