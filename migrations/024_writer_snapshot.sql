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
