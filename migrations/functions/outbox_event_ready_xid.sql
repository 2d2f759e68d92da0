-- An update that brings a row back records its transaction in ready_xid
-- (migration 019): a failed row retried (blocked or not), and, for a row that
-- is not blocked, a blocked row released or a lease given back early (release,
-- reset-lease, settle). The claim finds rows that became claimable behind its
-- position by these transactions, and the console's snapshot the rows that
-- became unpublished and not failed behind its own. A trigger, not the
-- statements, so that every writer does it — the relay, the action functions,
-- an operator's UPDATE by hand — and no role needs a grant on the column. Its
-- WHEN clause keeps it off the hot paths: the claim's lease, the mark and
-- blocking a row never fire it, and the claim's update stays HOT.
CREATE OR REPLACE FUNCTION {{.schema}}.outbox_event_ready_xid() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.ready_xid := pg_catalog.pg_current_xact_id();
    RETURN NEW;
END;
$$;

-- Created only when missing or older than this text (its comment says which it
-- is): CREATE TRIGGER locks outbox_event against writes, and every migrate runs
-- this file.
DO $trigger$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                   WHERE tgrelid = '{{.schema}}.outbox_event'::regclass AND tgname = 'outbox_event_ready_xid'
                     AND tgfoid = '{{.schema}}.outbox_event_ready_xid()'::regprocedure
                     AND pg_catalog.obj_description(oid, 'pg_trigger') = 'outboxtop ready_xid 2') THEN
        DROP TRIGGER IF EXISTS outbox_event_ready_xid ON {{.schema}}.outbox_event;
        CREATE TRIGGER outbox_event_ready_xid
            BEFORE UPDATE ON {{.schema}}.outbox_event
            FOR EACH ROW
            WHEN (NEW.published_at IS NULL AND NEW.failed_at IS NULL
                  AND (OLD.failed_at IS NOT NULL
                       OR (NOT NEW.blocked AND (OLD.blocked
                                                OR (OLD.lease_until IS NOT NULL AND NEW.lease_until IS NULL)))))
            EXECUTE FUNCTION {{.schema}}.outbox_event_ready_xid();
        COMMENT ON TRIGGER outbox_event_ready_xid ON {{.schema}}.outbox_event IS 'outboxtop ready_xid 2';
    END IF;
END
$trigger$;
