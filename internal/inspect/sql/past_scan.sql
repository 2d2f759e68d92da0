-- The counts past the pass, along two index ranges that hold each
-- unpublished, not failed, available row once, however the blocked hint is
-- set: not blocked (outbox_claim_idx: ready or leased) and blocked
-- (outbox_blocked_idx), each stopping at $1 rows. Kind 0 and 1 are their
-- tallies, with the oldest pending and ready ages among their rows; kind 2 the
-- $2 aggregates with the most ready rows read, with their head (one probe of
-- outbox_aggregate_idx) and whether it blocks them.
WITH r0 AS MATERIALIZED (
	SELECT {{template "pastScanColumns"}} FROM {{.schema}}.outbox_event
	WHERE published_at IS NULL AND failed_at IS NULL AND NOT blocked AND available_at <= now()
	ORDER BY available_at, seq LIMIT $1
), r1 AS MATERIALIZED (
	SELECT {{template "pastScanColumns"}} FROM {{.schema}}.outbox_event
	WHERE blocked AND published_at IS NULL AND failed_at IS NULL AND available_at <= now()
	ORDER BY aggregate_type, aggregate_id, seq LIMIT $1
), a AS MATERIALIZED (
	-- The condition in FILTER, not WHERE: under a WHERE the planner
	-- expected a row or two and sorted the rows by aggregate (in the
	-- collation's order, 40 ms for 20,000) instead of hashing them.
	SELECT aggregate_type, aggregate_id, count(*) FILTER (WHERE {{state "ready"}}) AS ready, min(seq) AS first,
		min(greatest(created_at, available_at)) FILTER (WHERE {{state "ready"}}) AS since
	FROM (SELECT * FROM r0 UNION ALL SELECT * FROM r1) r
	GROUP BY aggregate_type, aggregate_id HAVING count(*) FILTER (WHERE {{state "ready"}}) > 0
	ORDER BY 3 DESC, 4 LIMIT $2
)
SELECT 0, {{template "tally"}}, NULL::text, NULL::text, NULL::float8, NULL::bigint, NULL::boolean, {{template "tallyAges"}} FROM r0
UNION ALL SELECT 1, {{template "tally"}}, NULL, NULL, NULL, NULL, NULL, {{template "tallyAges"}} FROM r1
UNION ALL SELECT 2, a.ready, NULL, NULL, NULL, NULL, a.aggregate_type, a.aggregate_id,
	{{nullAge "a.since"}}, h.seq, h.blocks, NULL, NULL
FROM a CROSS JOIN LATERAL (
	SELECT p.seq, {{template "headBlocks"}} AS blocks FROM {{.schema}}.outbox_event p
	WHERE p.published_at IS NULL AND p.aggregate_type = a.aggregate_type AND p.aggregate_id = a.aggregate_id
	ORDER BY p.seq LIMIT 1) h
