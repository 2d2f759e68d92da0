-- The head of each aggregate ($1 types, $2 ids), and whether it blocks the
-- aggregate: one probe of outbox_aggregate_idx each, from the head the pass
-- knows on ($3: {type: {id: seq}}; see floor.go). An aggregate with no
-- unpublished row is left out.
SELECT k.t, k.id, p.seq, p.blocks
FROM unnest($1::text[], $2::text[]) AS k(t, id)
CROSS JOIN LATERAL (
	SELECT p.seq, {{template "headBlocks"}} AS blocks FROM {{.schema}}.outbox_event p
	WHERE p.published_at IS NULL AND p.aggregate_type = k.t AND p.aggregate_id = k.id
		AND p.seq >= coalesce(($3::jsonb -> k.t ->> k.id)::bigint, {{template "minSeq"}})
	ORDER BY p.seq LIMIT 1) p
