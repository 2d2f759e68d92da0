-- The consumer's inbox (the seed's consumed_event): one row per consumer and event,
-- inserted in the same transaction as the effect. consumed_at and its index:
-- pruning by age and the console's per-consumer recent rate.
--
-- An application may have made the table already, with the seed's two columns
-- (consumer_name, event_id, the primary key on both), its own grants and its
-- own row security. It is adopted as it is: consumed_at is added if it is
-- missing (a default that is not volatile is kept once in the catalog, so
-- nothing is rewritten or scanned: the rows there read this migration's time,
-- and the application's inserts that name only the two columns get now()),
-- then the index. Who may see or write which rows stays as the application
-- set it: the comment on consumed_at says the table was adopted, and 008 gives
-- row-level security only to an inbox without that comment.
DO $inbox$
BEGIN
    IF to_regclass('{{.schema}}.consumed_event') IS NOT NULL THEN
        ALTER TABLE {{.schema}}.consumed_event
            ADD COLUMN IF NOT EXISTS consumed_at timestamptz NOT NULL DEFAULT now();
        -- 008 reads the start of this text, whichever outboxtop runs it (an
        -- outboxtop before this one put it on consumed_event_consumed_at_idx).
        COMMENT ON COLUMN {{.schema}}.consumed_event.consumed_at IS
            'outboxtop: adopted: consumed_event was there before outboxtop migrated this schema; who sees which rows is the application''s';
    ELSE
        CREATE TABLE {{.schema}}.consumed_event (
            consumer_name text NOT NULL,
            event_id      uuid NOT NULL,
            consumed_at   timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (consumer_name, event_id)
        );
    END IF;
END
$inbox$;

-- On an adopted inbox, migrate builds it after this step, concurrently: the
-- consumers' inserts go on meanwhile.
CREATE INDEX IF NOT EXISTS consumed_event_consumed_at_idx
    ON {{.schema}}.consumed_event (consumer_name, consumed_at);
