-- The oldest $1 failures and the soonest $1 retries, each with whether it
-- heads its aggregate, and how many of each were read. A row heads its
-- aggregate when no unpublished row of it comes before, from the head the
-- pass knows on ($2: {type: {id: seq}}).
WITH failed_read AS MATERIALIZED (
	SELECT aggregate_type, aggregate_id, seq, {{template "headFromHint" .}} AS head FROM {{.schema}}.outbox_event r WHERE {{state "failed"}}
	ORDER BY failed_at, seq LIMIT $1
), scheduled_read AS MATERIALIZED (
	-- OFFSET 0: along outbox_ready_idx from now(), filtered as it goes.
	-- Planned whole, the planner (which believes a partial index of
	-- unpublished rows nearly empty) read outbox_claim_seq_idx in full
	-- and sorted: 10,000 buffers behind a held horizon for no row.
	SELECT aggregate_type, aggregate_id, seq, {{template "headFromHint" .}} AS head
	FROM (SELECT * FROM {{.schema}}.outbox_event WHERE published_at IS NULL AND available_at > now()
		ORDER BY available_at, created_at, event_id OFFSET 0) r
	WHERE {{state "scheduled"}}
	LIMIT $1
)
SELECT aggregate_type, aggregate_id, seq FROM failed_read WHERE head
UNION ALL SELECT aggregate_type, aggregate_id, seq FROM scheduled_read WHERE head
UNION ALL SELECT NULL, 'failed', (SELECT count(*) FROM failed_read)
UNION ALL SELECT NULL, 'scheduled', (SELECT count(*) FROM scheduled_read)
{{- define "headFromHint"}}NOT EXISTS (SELECT 1 FROM {{.schema}}.outbox_event p
			WHERE p.published_at IS NULL AND p.aggregate_type = r.aggregate_type AND p.aggregate_id = r.aggregate_id
			AND p.seq < r.seq AND p.seq >= coalesce(($2::jsonb -> r.aggregate_type ->> r.aggregate_id)::bigint, {{template "minSeq"}})){{end}}
