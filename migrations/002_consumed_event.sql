-- The consumer's inbox (the seed's consumed_event): one row per consumer and event,
-- inserted in the same transaction as the effect.
CREATE TABLE IF NOT EXISTS {{.schema}}.consumed_event (
    consumer_name text NOT NULL,
    event_id      uuid NOT NULL,
    consumed_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_name, event_id)
);

-- Pruning by age and the console's per-consumer recent rate.
CREATE INDEX IF NOT EXISTS consumed_event_consumed_at_idx
    ON {{.schema}}.consumed_event (consumer_name, consumed_at);
