-- The aggregates with events marked unserialized, from the first $1 marked
-- rows of outbox_unserialized_idx (so the read is bounded however many there
-- are): each aggregate's marked events and its newest mark, most marked first,
-- and in every row the number of aggregates and of rows read (rows = $1:
-- there may be more).
WITH marked AS (
	SELECT aggregate_type, aggregate_id, created_at
	FROM {{.schema}}.outbox_event
	WHERE unserialized
	ORDER BY aggregate_type, aggregate_id, seq
	LIMIT $1
), agg AS (
	SELECT aggregate_type, aggregate_id, count(*) AS events, max(created_at) AS last_at
	FROM marked GROUP BY aggregate_type, aggregate_id
)
SELECT aggregate_type, aggregate_id, events, last_at,
	(SELECT count(*) FROM agg) AS aggregates, (SELECT count(*) FROM marked) AS rows
FROM agg
ORDER BY events DESC, last_at DESC, aggregate_type, aggregate_id
LIMIT $2
