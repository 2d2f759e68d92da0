-- The snapshot's pass: the first $1 unpublished, not failed rows in seq order.
-- Those from seq $3 on (outbox_claim_seq_idx), the late rows below $3 (rows
-- that the transactions from xid $4 on and those in $5 made unpublished or not
-- failed, through outbox_ready_xid_idx and outbox_stopped_xid_idx), and those
-- of the seqs $7 (see floor.go). Its first column says which of four kinds a
-- row is:
--
--   0: a group of those rows by event type, state, attempts bucket and, for
--      leased rows, the relay holding them (lease_holder, '' when unnamed);
--   1: an aggregate of those rows, at most $2, most ready rows first, with its
--      head (one probe of outbox_aggregate_idx from the head $6 remembers for
--      it or its first late row, whichever comes first; from the aggregate's
--      start when $6 has none, not from its first row read: a failed head is
--      not among them) and whether that head blocks it;
--   2: an aggregate of the late rows (failed ones too) and its first late row;
--   3: one row, the seqs of the rows read, in order.
WITH late AS MATERIALIZED (
	SELECT l.* FROM (
		({{template "late" args . "xid" ">= $4::xid8"}})
		UNION ALL ({{template "stopped" args . "xid" ">= $4::xid8"}})
		UNION ALL
		SELECT r.* FROM pg_catalog.unnest($5::xid8[]) AS x(xid) CROSS JOIN LATERAL (
			({{template "late" args . "xid" "= x.xid"}})
			UNION ALL ({{template "stopped" args . "xid" "= x.xid"}})) r
		OFFSET 0) l
), lm AS MATERIALIZED (
	SELECT aggregate_type, aggregate_id, min(seq) AS seq FROM late GROUP BY aggregate_type, aggregate_id
), s AS MATERIALIZED (
	SELECT seq, event_type, aggregate_type, aggregate_id, created_at, available_at, lease_holder,
		{{template "stateCase"}} AS state, {{attemptsBucket}} AS bucket,
		lease_token IS NOT NULL AND lease_until <= now() AS expired
	FROM (
		SELECT *, NULL::timestamptz AS published_at FROM late WHERE failed_at IS NULL AND seq < $3
		UNION ALL
		(SELECT {{template "passColumns"}}, published_at FROM {{.schema}}.outbox_event WHERE published_at IS NULL AND failed_at IS NULL AND seq >= $3
		 ORDER BY seq LIMIT $1)
		UNION ALL
		-- The rows seen before, each looked up again (outbox_claim_seq_idx),
		-- but for the late ones, read above.
		SELECT r.* FROM pg_catalog.unnest($7::bigint[]) AS q(seq) CROSS JOIN LATERAL (
			SELECT {{template "passColumns"}}, published_at FROM {{.schema}}.outbox_event r
			WHERE r.seq = q.seq AND r.published_at IS NULL AND r.failed_at IS NULL
				AND NOT coalesce(r.ready_xid >= $4::xid8 OR r.ready_xid = ANY ($5::xid8[]), false)
			OFFSET 0) r
	) u
	ORDER BY seq LIMIT $1
), a AS MATERIALIZED (
	SELECT aggregate_type, aggregate_id, count(*) FILTER (WHERE state = 'ready') AS ready, min(seq) AS first,
		min(greatest(created_at, available_at)) FILTER (WHERE state = 'ready') AS ready_since
	FROM s GROUP BY aggregate_type, aggregate_id
	ORDER BY 3 DESC, 4 LIMIT $2
)
SELECT 0, event_type, state, bucket, count(*), count(*) FILTER (WHERE expired),
	coalesce({{nullAge "min(created_at)"}}, 0),
	coalesce({{nullAge "min(greatest(created_at, available_at))"}}, 0),
	{{finite "min(available_at)"}}, CASE WHEN state = 'leased' THEN coalesce(lease_holder, '') END,
	NULL::text, NULL::text, NULL::bigint, NULL::boolean, NULL::float8, NULL::bigint[]
FROM s GROUP BY event_type, state, bucket, 10
UNION ALL
SELECT 1, NULL, NULL, NULL, a.ready, NULL, NULL, NULL, NULL, NULL,
	a.aggregate_type, a.aggregate_id, h.seq, h.blocks, {{nullAge "a.ready_since"}}, NULL
FROM a LEFT JOIN lm ON lm.aggregate_type = a.aggregate_type AND lm.aggregate_id = a.aggregate_id
CROSS JOIN LATERAL (SELECT ($6::jsonb -> a.aggregate_type ->> a.aggregate_id)::bigint AS seq) hint
CROSS JOIN LATERAL (
	SELECT p.seq, {{template "headBlocks"}} AS blocks FROM {{.schema}}.outbox_event p
	WHERE p.published_at IS NULL AND p.aggregate_type = a.aggregate_type AND p.aggregate_id = a.aggregate_id
		AND p.seq >= CASE WHEN hint.seq IS NULL THEN {{template "minSeq"}} ELSE least(hint.seq, lm.seq) END
	ORDER BY p.seq LIMIT 1) h
UNION ALL
SELECT 2, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL, aggregate_type, aggregate_id, seq, NULL, NULL, NULL FROM lm
UNION ALL
SELECT 3, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	coalesce((SELECT array_agg(seq ORDER BY seq) FROM s), '{}')
