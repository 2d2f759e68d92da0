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
-- $1 the events just claimed.
WITH claimed AS (
    SELECT e.aggregate_type, e.aggregate_id, e.seq, e.writer_xid, e.writer_snapshot, e.correction_of
    FROM {{.schema}}.outbox_event AS e
    WHERE e.event_id = ANY($1::uuid[]) AND e.published_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger AS t
                      WHERE t.tgrelid = '{{.schema}}.outbox_event'::pg_catalog.regclass
                        AND t.tgname = 'outbox_event_commit_order')
      AND pg_catalog.obj_description('{{.schema}}.outbox_event_order_seq'::pg_catalog.regclass, 'pg_class')
          IS DISTINCT FROM 'outboxtop commit order off'
), pairs AS (
    -- each claimed event and the unpublished event just before it
    SELECT c.aggregate_type, c.aggregate_id, c.seq AS later, p.writer_xid AS earlier_xid,
           p.correction_of AS earlier_correction, c.writer_xid AS later_xid, c.writer_snapshot AS later_snapshot
    FROM claimed AS c
    CROSS JOIN LATERAL (
        SELECT p.writer_xid, p.correction_of FROM {{.schema}}.outbox_event AS p
        WHERE p.aggregate_type = c.aggregate_type AND p.aggregate_id = c.aggregate_id
          AND p.seq < c.seq AND p.published_at IS NULL
        ORDER BY p.seq DESC LIMIT 1) AS p
    UNION ALL
    -- and the unpublished event just after it
    SELECT c.aggregate_type, c.aggregate_id, n.seq, c.writer_xid, c.correction_of, n.writer_xid, n.writer_snapshot
    FROM claimed AS c
    CROSS JOIN LATERAL (
        SELECT n.seq, n.writer_xid, n.writer_snapshot FROM {{.schema}}.outbox_event AS n
        WHERE n.aggregate_type = c.aggregate_type AND n.aggregate_id = c.aggregate_id
          AND n.seq > c.seq AND n.published_at IS NULL
        ORDER BY n.seq LIMIT 1) AS n
), unknown AS (
    SELECT e.event_id
    FROM {{.schema}}.outbox_event AS e
    JOIN pairs ON e.aggregate_type = pairs.aggregate_type AND e.aggregate_id = pairs.aggregate_id
              AND e.seq = pairs.later
    WHERE pairs.earlier_xid <> pairs.later_xid AND pairs.earlier_correction IS NULL
      AND NOT pg_catalog.pg_visible_in_snapshot(pairs.earlier_xid, pairs.later_snapshot)
      AND e.published_at IS NULL AND e.unserialized IS NOT TRUE
    ORDER BY e.seq
    FOR UPDATE OF e
)
UPDATE {{.schema}}.outbox_event AS e SET unserialized = true
FROM unknown WHERE e.event_id = unknown.event_id
