-- Nothing on the producer's commit path but two column defaults.
--
-- The insert trigger that sent a pg_notify per statement goes: NOTIFY makes
-- every committing transaction take PostgreSQL's database-wide notify lock
-- and hold it through its commit's WAL flush, so every producer queued on one
-- lock. The relays learn of new events from the identity of seq instead
-- (functions/outboxtop_inserted.sql), which costs the producer nothing.
DROP TRIGGER IF EXISTS outbox_event_notify ON {{.schema}}.outbox_event;
DROP FUNCTION IF EXISTS {{.schema}}.outbox_event_notify();

-- writer_xid and writer_snapshot: the inserting transaction and the snapshot
-- its INSERT statement ran with, both column defaults (no trigger, no lock).
-- With them the relay tells, for two events of one aggregate, whether the
-- earlier one had committed before the later one was inserted: if so their
-- seq order is their commit order (writers that serialize on the aggregate,
-- e.g. the seed's UPDATE of the order row before the INSERT, always do); if
-- not, the two transactions overlapped and nobody can know which committed
-- first, and when the relay meets both unpublished it marks the later one
-- unserialized (order unknown) instead of claiming an order. ready_xid cannot
-- serve: updates that bring a row back overwrite it. Rows inserted before this
-- migration have neither and are never marked by the relay.
--
-- Adding a column with a default rewrites nothing (the defaults apply to new
-- rows); the ACCESS EXCLUSIVE lock is held only for the catalog change.
ALTER TABLE {{.schema}}.outbox_event
    ADD COLUMN IF NOT EXISTS writer_xid xid8,
    ADD COLUMN IF NOT EXISTS writer_snapshot pg_snapshot;
ALTER TABLE {{.schema}}.outbox_event
    ALTER COLUMN writer_xid SET DEFAULT pg_catalog.pg_current_xact_id(),
    ALTER COLUMN writer_snapshot SET DEFAULT pg_catalog.pg_current_snapshot();

-- The backlog present when a seed table was adopted (migration 001 numbered it
-- by created_at, the transactions' start, and left the count in seq's
-- comment): no one knows in which order those events committed, so every
-- unpublished event of it that follows another unpublished event of its
-- aggregate is marked unserialized, and the console and status say their
-- order is unknown instead of claiming it.
DO $adopted$
DECLARE
    through bigint := pg_catalog.substring(
        pg_catalog.col_description('{{.schema}}.outbox_event'::regclass,
            (SELECT attnum FROM pg_catalog.pg_attribute
             WHERE attrelid = '{{.schema}}.outbox_event'::regclass AND attname = 'seq')::integer),
        'adopted through seq ([0-9]+)')::bigint;
BEGIN
    IF through IS NULL THEN
        RETURN;
    END IF;
    UPDATE {{.schema}}.outbox_event AS e SET unserialized = true
    WHERE e.seq <= through AND e.published_at IS NULL AND e.unserialized IS NOT TRUE
      AND EXISTS (SELECT 1 FROM {{.schema}}.outbox_event AS p
                  WHERE p.aggregate_type = e.aggregate_type AND p.aggregate_id = e.aggregate_id
                    AND p.seq < e.seq AND p.published_at IS NULL);
END
$adopted$;

-- The relays mark unserialized rows: roles that may update lease_token (the
-- relays, as the printed grants say) may update it too.
DO $grant$
DECLARE
    r regrole;
BEGIN
    FOR r IN
        SELECT DISTINCT (a.acl).grantee::regrole
        FROM (SELECT aclexplode(attacl) AS acl FROM pg_attribute
              WHERE attrelid = '{{.schema}}.outbox_event'::regclass AND attname = 'lease_token'
                AND attacl IS NOT NULL) a
        WHERE (a.acl).privilege_type = 'UPDATE' AND (a.acl).grantee <> 0
    LOOP
        EXECUTE format('GRANT UPDATE (unserialized) ON {{.schema}}.outbox_event TO %s', r);
    END LOOP;
END
$grant$;
