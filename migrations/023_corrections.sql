-- Corrected copies (functions/outboxtop_correct.sql): an operator replaces a
-- failed event's payload by a corrected one. The correction is a new event,
-- with correction_of = the original's id, in the original's place in its
-- aggregate's order (its seq); the original moves to the archive, failed,
-- where the correction's correction_of finds it and it finds the correction.
-- The indexes are partial: rows that are not corrections add nothing to them,
-- and neither column is written by the claim or the mark. Adding the columns
-- rewrites nothing; on existing tables migrate builds the indexes
-- concurrently, after this step's transaction (online.go).
ALTER TABLE {{.schema}}.outbox_event ADD COLUMN IF NOT EXISTS correction_of uuid;
ALTER TABLE {{.schema}}.outbox_event_archive ADD COLUMN IF NOT EXISTS correction_of uuid;

CREATE INDEX IF NOT EXISTS outbox_correction_of_idx
    ON {{.schema}}.outbox_event (correction_of)
    WHERE correction_of IS NOT NULL;

CREATE INDEX IF NOT EXISTS outbox_event_archive_correction_of_idx
    ON {{.schema}}.outbox_event_archive (correction_of)
    WHERE correction_of IS NOT NULL;

-- diff: what an action changed in an event's content, written by the action
-- function itself (a correction: the payload's changes, path by path), never
-- by its caller.
ALTER TABLE {{.schema}}.outbox_audit ADD COLUMN IF NOT EXISTS diff jsonb;
