-- A heartbeat's interval is what a relay's --heartbeat-interval allows, 100 ms
-- to an hour: readers call a relay gone after 3 × interval_ms, and a relay role
-- that stored 700000000 (8 days) kept a relay last seen 20 hours ago "running",
-- or with 800000000 made every reader's integer arithmetic overflow.
-- outboxtop_relay_beat refuses other values (functions/), and the readers cap
-- what is stored at an hour.
--
-- The constraint is added NOT VALID, so a table that already holds such a row
-- still migrates, then validated when no row breaks it. A row that does stays
-- (it goes at the next beat of its holder, or after a day without one, as the
-- beat's clean-up deletes it), read as if its interval were an hour; the
-- constraint is then left NOT VALID, which still holds every row written from
-- now on (ALTER TABLE … VALIDATE CONSTRAINT outbox_relay_interval_ms_bound
-- once the row is gone makes it plain).
DO $interval$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint
                   WHERE conrelid = '{{.schema}}.outbox_relay'::regclass AND conname = 'outbox_relay_interval_ms_bound') THEN
        ALTER TABLE {{.schema}}.outbox_relay ADD CONSTRAINT outbox_relay_interval_ms_bound
            CHECK (interval_ms BETWEEN 1 AND 3600000) NOT VALID;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM {{.schema}}.outbox_relay WHERE NOT (interval_ms BETWEEN 1 AND 3600000)) THEN
        ALTER TABLE {{.schema}}.outbox_relay VALIDATE CONSTRAINT outbox_relay_interval_ms_bound;
    END IF;
END
$interval$;
