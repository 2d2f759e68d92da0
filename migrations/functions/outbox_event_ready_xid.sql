-- An update that makes a row claimable again records its transaction in
-- ready_xid (migration 019): a blocked row released, a failed row retried, a
-- lease given back early (release, reset-lease, settle). The claim finds rows
-- that became claimable behind its position by these transactions. A trigger,
-- not the statements, so that every writer does it — the relay, the action
-- functions, an operator's UPDATE by hand — and no role needs a grant on the
-- column. Its WHEN clause keeps it off the hot paths: the claim's lease and the
-- mark never fire it, and the claim's update stays HOT.
CREATE OR REPLACE FUNCTION {{.schema}}.outbox_event_ready_xid() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.ready_xid := pg_catalog.pg_current_xact_id();
    RETURN NEW;
END;
$$;

-- Created only when missing: CREATE TRIGGER locks outbox_event against writes,
-- and every migrate runs this file.
DO $trigger$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                   WHERE tgrelid = '{{.schema}}.outbox_event'::regclass AND tgname = 'outbox_event_ready_xid'
                     AND tgfoid = '{{.schema}}.outbox_event_ready_xid()'::regprocedure) THEN
        DROP TRIGGER IF EXISTS outbox_event_ready_xid ON {{.schema}}.outbox_event;
        CREATE TRIGGER outbox_event_ready_xid
            BEFORE UPDATE ON {{.schema}}.outbox_event
            FOR EACH ROW
            WHEN (NEW.published_at IS NULL AND NEW.failed_at IS NULL AND NOT NEW.blocked
                  AND (OLD.blocked OR OLD.failed_at IS NOT NULL
                       OR (OLD.lease_until IS NOT NULL AND NEW.lease_until IS NULL)))
            EXECUTE FUNCTION {{.schema}}.outbox_event_ready_xid();
    END IF;
END
$trigger$;
