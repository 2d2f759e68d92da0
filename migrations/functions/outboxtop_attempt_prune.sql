-- Keeps outbox_attempt bounded: after each statement that adds history, every
-- event it added to keeps its newest 20 rows. A statement trigger with the
-- added rows as a transition table, so a settle of a whole batch prunes once;
-- the owner's rights, so the relays that add history need no DELETE (and
-- cannot remove any).
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_attempt_prune() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
BEGIN
    -- Driven by the added events, each one a walk of the primary key from its
    -- newest row: a join with the whole table (the planner's choice for a
    -- plain DELETE … USING) read every history row, 30 ms a batch at 200,000
    -- rows and growing with the table.
    DELETE FROM {{.schema}}.outbox_attempt a
    WHERE (a.event_id, a.attempt_id) IN (
        SELECT t.event_id, o.attempt_id
        FROM (SELECT DISTINCT n.event_id FROM added n) t
        CROSS JOIN LATERAL (SELECT b.attempt_id FROM {{.schema}}.outbox_attempt b
                            WHERE b.event_id = t.event_id ORDER BY b.attempt_id DESC OFFSET 20) o);
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
