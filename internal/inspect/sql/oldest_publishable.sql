-- The age in seconds (0 when none) of the longest-waiting publishable event:
-- ready, and not waiting behind a failed or scheduled head of its aggregate, so
-- one poison event does not make it grow. It walks the ordered claim's index
-- (outbox_claim_idx), which holds no failed, scheduled or known-waiting row, so
-- its cost is that of a claim's first row, not the size of a storm.
SELECT coalesce((SELECT extract(epoch FROM now() - greatest(c.created_at, c.available_at))::float8
	FROM {{.schema}}.outbox_event c
	WHERE c.published_at IS NULL AND c.failed_at IS NULL AND NOT c.blocked
	  AND c.available_at <= now() AND (c.lease_until IS NULL OR c.lease_until <= now())
	  AND NOT {{template "waiting" args . "row" "c"}}
	ORDER BY c.available_at, c.seq
	LIMIT 1), 0)
