-- Wake the relays after inserts: statement level, so a bulk insert or COPY sends one
-- notification. The channel carries the schema's name so relays of other schemas in
-- the same database sleep on.
CREATE OR REPLACE FUNCTION {{.schema}}.outbox_event_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_catalog.pg_notify({{.channel}}, '');
    RETURN NULL;
END;
$$;

-- Created only when missing: CREATE TRIGGER locks outbox_event against inserts, and
-- every migrate runs this file.
DO $trigger$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                   WHERE tgrelid = '{{.schema}}.outbox_event'::regclass AND tgname = 'outbox_event_notify'
                     AND tgfoid = '{{.schema}}.outbox_event_notify()'::regprocedure) THEN
        DROP TRIGGER IF EXISTS outbox_event_notify ON {{.schema}}.outbox_event;
        CREATE TRIGGER outbox_event_notify
            AFTER INSERT ON {{.schema}}.outbox_event
            FOR EACH STATEMENT EXECUTE FUNCTION {{.schema}}.outbox_event_notify();
    END IF;
END
$trigger$;
