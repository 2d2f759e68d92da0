-- Keeps outbox_attempt bounded: after each statement that adds history, every
-- event it added to keeps its newest 20 rows. A statement trigger with the
-- added rows as a transition table, so a settle of a whole batch prunes once;
-- the owner's rights, so the relays that add history need no DELETE (and
-- cannot remove any).
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_attempt_prune() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
BEGIN
    DELETE FROM {{.schema}}.outbox_attempt a
    USING (SELECT DISTINCT n.event_id FROM added n) t
    WHERE a.event_id = t.event_id
      AND a.attempt_id <= (SELECT b.attempt_id FROM {{.schema}}.outbox_attempt b
                           WHERE b.event_id = t.event_id ORDER BY b.attempt_id DESC OFFSET 20 LIMIT 1);
    RETURN NULL;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_attempt_prune() FROM PUBLIC;

DO $trigger$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                   WHERE tgrelid = '{{.schema}}.outbox_attempt'::regclass AND tgname = 'outbox_attempt_prune') THEN
        CREATE TRIGGER outbox_attempt_prune
            AFTER INSERT ON {{.schema}}.outbox_attempt
            REFERENCING NEW TABLE AS added
            FOR EACH STATEMENT EXECUTE FUNCTION {{.schema}}.outboxtop_attempt_prune();
    END IF;
END
$trigger$;
