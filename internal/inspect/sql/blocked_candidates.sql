-- The blocked list's candidates past the pass: the aggregates that have a
-- ready row, each with an upper bound of the events waiting in it (ub): its
-- rows the relay hinted blocked, in any state (outbox_blocked_idx, read
-- index-only), plus its ready rows not hinted (outbox_claim_idx up to now(),
-- which holds every one of them). An aggregate's waiting events are ready
-- rows, so none is left out of ub. $1 and $2: the most rows each read takes;
-- $3: the candidates returned, most first (the first one left out bounds
-- every other). Kind 0 is one row: the rows each read took.
WITH h AS MATERIALIZED (
	SELECT aggregate_type, aggregate_id, count(*) AS n FROM (
		SELECT aggregate_type, aggregate_id FROM {{.schema}}.outbox_event
		WHERE blocked AND published_at IS NULL
		ORDER BY aggregate_type, aggregate_id, seq LIMIT $1) r
	GROUP BY aggregate_type, aggregate_id
), u AS MATERIALIZED (
	-- The condition in FILTER, not WHERE (see past_scan.sql): the rows
	-- are hashed by aggregate, not sorted.
	SELECT aggregate_type, aggregate_id, count(*) AS n, count(*) FILTER (WHERE {{state "ready"}}) AS ready FROM (
		SELECT aggregate_type, aggregate_id, published_at, failed_at, available_at, lease_until FROM {{.schema}}.outbox_event
		WHERE published_at IS NULL AND failed_at IS NULL AND NOT blocked AND available_at <= now()
		ORDER BY available_at, seq LIMIT $2) r
	GROUP BY aggregate_type, aggregate_id
)
SELECT 0 AS kind, NULL::text, NULL::text, coalesce((SELECT sum(n) FROM h), 0)::bigint, coalesce((SELECT sum(n) FROM u), 0)::bigint
UNION ALL
(SELECT 1, aggregate_type, aggregate_id, ub, NULL FROM (
	SELECT aggregate_type, aggregate_id, (coalesce(h.n, 0) + coalesce(u.ready, 0))::bigint AS ub
	FROM h FULL JOIN u USING (aggregate_type, aggregate_id)) c
 WHERE ub > 0
 ORDER BY ub DESC LIMIT $3)
