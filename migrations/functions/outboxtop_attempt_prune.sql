-- Keeps outbox_attempt bounded: after each statement that adds history, every
-- event it added to keeps its newest 20 rows (an event that had more before
-- loses as many as it gained, so it comes down to 20 no faster). A statement
-- trigger with the added rows as a transition table, so a settle of a whole
-- batch prunes once; the owner's rights, so the relays that add history need
-- no DELETE (and cannot remove any).
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_attempt_prune() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    ev uuid[];
    att bigint[];
BEGIN
    -- For each event it added k rows to, the k rows just past its newest 20
    -- go: found by a walk of the primary key from the event's newest row, 20
    -- + k entries, never further, and deleted each by its whole key. Walking
    -- on to the older end (OFFSET 20 with no limit), or deleting by event_id
    -- with the rest as a filter (the planner's choice for an IN over the
    -- pair), met every row pruned before, which a transaction holding the
    -- xmin horizon keeps in the index, dead: an event tried 400 times while
    -- the horizon was held cost 167 ms a batch of 500. A join with the whole
    -- table (its choice for a plain DELETE … USING) read every history row:
    -- 30 ms a batch at 200,000 rows.
    SELECT pg_catalog.array_agg(t.event_id), pg_catalog.array_agg(o.attempt_id) INTO ev, att
    FROM (SELECT n.event_id, pg_catalog.count(*) AS k FROM added n GROUP BY n.event_id) t
    CROSS JOIN LATERAL (SELECT b.attempt_id FROM {{.schema}}.outbox_attempt b
                        WHERE b.event_id = t.event_id ORDER BY b.attempt_id DESC OFFSET 20 LIMIT t.k) o;
    IF ev IS NOT NULL THEN
        DELETE FROM {{.schema}}.outbox_attempt a
        USING ROWS FROM (pg_catalog.unnest(ev), pg_catalog.unnest(att)) AS d(e, i)
        WHERE a.event_id = d.e AND a.attempt_id = d.i;
    END IF;
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
