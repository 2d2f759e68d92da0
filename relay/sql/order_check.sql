-- Order check (ordered claims, the detect commit order): marks unserialized,
-- "order unknown", each event whose place after the previous unpublished event
-- of its aggregate no one can know, among the events just claimed and their
-- neighbours. Two events of one aggregate are in commit order when the earlier
-- one's transaction had committed before the later one's INSERT statement took
-- its snapshot (writer_xid visible in writer_snapshot): always so for writers
-- that serialize on the aggregate, such as the seed's UPDATE of the order row
-- before the INSERT. When it had not, the transactions overlapped, and which
-- committed first is not recorded anywhere. The relay meets such a pair here
-- only when both were committed and unpublished at once; a later event that
-- committed while the earlier one was still open was claimed, and published,
-- first, which is its commit order. Rows without writer_snapshot (inserted
-- before migration 024) are never marked, and neither is the event after a
-- corrected copy (outboxtop_correct): the copy took the place of the event it
-- replaces, whose order was known, and its own transaction came long after. Nothing is marked while the order
-- is enforced (the writers wait for each other inside their INSERT, after its
-- snapshot) or off. The rows to mark are locked in seq order, as every
-- statement that locks several events does.
--
-- The events just claimed, as the claim returned them (so that no claimed
-- row is read again), one array each, in seq order: $1 aggregate types, $2
-- aggregate ids, $3 seqs, $4 writer_xid and $5 writer_snapshot (text, NULL on
-- rows inserted before migration 024), $6 whether each is a corrected copy.
WITH claimed AS (
    SELECT c.aggregate_type, c.aggregate_id, c.seq, c.writer_xid::xid8 AS writer_xid,
           c.writer_snapshot::pg_snapshot AS writer_snapshot,
           CASE WHEN c.corrected THEN true END AS correction_of
    FROM ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::text[]), pg_catalog.unnest($3::bigint[]),
                    pg_catalog.unnest($4::text[]), pg_catalog.unnest($5::text[]), pg_catalog.unnest($6::bool[]))
         AS c(aggregate_type, aggregate_id, seq, writer_xid, writer_snapshot, corrected)
    WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger AS t
                      WHERE t.tgrelid = '{{.schema}}.outbox_event'::pg_catalog.regclass
                        AND t.tgname = 'outbox_event_commit_order')
      AND pg_catalog.obj_description('{{.schema}}.outbox_event_order_seq'::pg_catalog.regclass, 'pg_class')
          IS DISTINCT FROM 'outboxtop commit order off'
), pairs AS (
    -- consecutive claimed events of one aggregate. An earlier unpublished
    -- event that the claim could see and did not take would have held this
    -- one back (ordered claims wait behind failed, scheduled and in-flight
    -- events), so the event before a claimed one is in the batch or invisible;
    -- nothing is read backwards, where a held xmin horizon keeps the dead
    -- entries of every event of the aggregate published since.
    SELECT x.aggregate_type, x.aggregate_id, x.seq AS later, x.prev_xid AS earlier_xid,
           x.prev_correction AS earlier_correction, x.writer_xid AS later_xid, x.writer_snapshot AS later_snapshot
    FROM (SELECT c.*, pg_catalog.lag(c.writer_xid) OVER w AS prev_xid,
                 pg_catalog.lag(c.correction_of) OVER w AS prev_correction, pg_catalog.lag(c.seq) OVER w AS prev_seq
          FROM claimed AS c
          WINDOW w AS (PARTITION BY c.aggregate_type, c.aggregate_id ORDER BY c.seq)) AS x
    WHERE x.prev_seq IS NOT NULL
    UNION ALL
    -- the last claimed event of each aggregate and the unpublished event just
    -- after it (read forwards: nothing after it can have been published)
    SELECT l.aggregate_type, l.aggregate_id, n.seq, l.writer_xid, l.correction_of, n.writer_xid, n.writer_snapshot
    FROM (SELECT DISTINCT ON (c.aggregate_type, c.aggregate_id) c.*
          FROM claimed AS c ORDER BY c.aggregate_type, c.aggregate_id, c.seq DESC) AS l
    CROSS JOIN LATERAL (
        SELECT n.seq, n.writer_xid, n.writer_snapshot FROM {{.schema}}.outbox_event AS n
        WHERE n.aggregate_type = l.aggregate_type AND n.aggregate_id = l.aggregate_id
          AND n.seq > l.seq AND n.published_at IS NULL
        ORDER BY n.seq LIMIT 1) AS n
), flagged AS MATERIALIZED (
    -- Decided from what the claim returned and the forward reads: only the
    -- events to mark are read again, below.
    SELECT * FROM pairs
    WHERE pairs.earlier_xid <> pairs.later_xid AND pairs.earlier_correction IS NULL
      AND NOT pg_catalog.pg_visible_in_snapshot(pairs.earlier_xid, pairs.later_snapshot)
), unknown AS (
    SELECT e.event_id
    FROM {{.schema}}.outbox_event AS e
    JOIN flagged ON e.aggregate_type = flagged.aggregate_type AND e.aggregate_id = flagged.aggregate_id
                AND e.seq = flagged.later
    WHERE e.published_at IS NULL AND e.unserialized IS NOT TRUE
    ORDER BY e.seq
    FOR UPDATE OF e
)
UPDATE {{.schema}}.outbox_event AS e SET unserialized = true
FROM unknown WHERE e.event_id = unknown.event_id
