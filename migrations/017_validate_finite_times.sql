-- Migration 016's constraints, validated in a transaction of their own: the
-- scan holds only a SHARE UPDATE EXCLUSIVE lock, so inserts and the relay's
-- updates go on meanwhile. Where stored rows break one, it stays NOT VALID (see
-- 016) and the migration goes on, saying so.
DO $validate$
DECLARE
    c record;
BEGIN
    FOR c IN
        SELECT conrelid::regclass AS tab, conname FROM pg_constraint
        WHERE conrelid IN ('{{.schema}}.outbox_event'::regclass, '{{.schema}}.consumed_event'::regclass)
          AND conname IN ('outbox_event_times_finite', 'consumed_event_consumed_at_finite') AND NOT convalidated
    LOOP
        BEGIN
            EXECUTE format('ALTER TABLE %s VALIDATE CONSTRAINT %I', c.tab, c.conname);
        EXCEPTION WHEN check_violation THEN
            RAISE WARNING '% holds rows with infinite times: constraint % stays NOT VALID (new rows are checked)',
                c.tab, c.conname
                USING HINT = 'give them finite times as the owner, then ALTER TABLE ' || c.tab || ' VALIDATE CONSTRAINT ' || c.conname;
        END;
    END LOOP;
END
$validate$;
