-- Times are finite. The producer sets available_at, a consumer consumed_at, and
-- PostgreSQL takes 'infinity' and '-infinity' for them: such a row made status
-- fail (infinite timestamps cannot be subtracted) and every listing fail to read
-- it (Go's time has no infinity). Every time column a role may write is
-- checked; the seed's insert (created_at and available_at from their defaults)
-- stays valid.
--
-- Added NOT VALID: that takes an ACCESS EXCLUSIVE lock for a moment and reads
-- no row, so a table that already holds such rows still migrates. Migration 017
-- validates them in a transaction of its own, which reads the table without
-- blocking writes; a row that breaks them keeps them NOT VALID (every row
-- written from now on is still checked). The readers show a stored infinity as
-- 9999-12-31 23:59:59 UTC and -infinity as 0001-01-01 00:00:00 UTC. To let the
-- constraint hold for every row, give such rows finite times as the table's
-- owner (a scheduled event at infinity: `outboxtop retry` makes it ready now),
-- then ALTER TABLE … VALIDATE CONSTRAINT ….
DO $finite$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint
                   WHERE conrelid = '{{.schema}}.outbox_event'::regclass AND conname = 'outbox_event_times_finite') THEN
        ALTER TABLE {{.schema}}.outbox_event ADD CONSTRAINT outbox_event_times_finite
            CHECK (isfinite(created_at) AND isfinite(available_at) AND isfinite(lease_until)
                   AND isfinite(published_at) AND isfinite(failed_at)) NOT VALID;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_constraint
                   WHERE conrelid = '{{.schema}}.consumed_event'::regclass AND conname = 'consumed_event_consumed_at_finite') THEN
        ALTER TABLE {{.schema}}.consumed_event ADD CONSTRAINT consumed_event_consumed_at_finite
            CHECK (isfinite(consumed_at)) NOT VALID;
    END IF;
END
$finite$;
