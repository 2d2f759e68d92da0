-- The seed's outbox_event, created only when absent: a table someone already made
-- by hand with exactly this DDL is kept, with its rows, and upgraded below.
CREATE TABLE IF NOT EXISTS {{.schema}}.outbox_event (
    event_id       uuid PRIMARY KEY,
    aggregate_type text NOT NULL,
    aggregate_id   text NOT NULL,
    event_type     text NOT NULL,
    payload        jsonb NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    available_at   timestamptz NOT NULL DEFAULT now(),
    attempts       integer NOT NULL DEFAULT 0,
    lease_token    uuid,
    lease_until    timestamptz,
    published_at   timestamptz
);

CREATE INDEX IF NOT EXISTS outbox_ready_idx
    ON {{.schema}}.outbox_event (available_at, created_at, event_id)
    WHERE published_at IS NULL;

-- seq: insertion order, which per-aggregate order follows. Rows of an existing
-- seed table are numbered in the seed's own order (created_at, then event_id), not
-- in physical order, which the seed relay's updates have shuffled; new rows follow
-- them. So: add the column plain, number the rows, then make it the identity.
DO $seq$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute
                   WHERE attrelid = '{{.schema}}.outbox_event'::regclass AND attname = 'seq' AND NOT attisdropped) THEN
        ALTER TABLE {{.schema}}.outbox_event ADD COLUMN seq bigint;
        UPDATE {{.schema}}.outbox_event AS e SET seq = n.rn
        FROM (SELECT event_id, row_number() OVER (ORDER BY created_at, event_id) AS rn
              FROM {{.schema}}.outbox_event) AS n
        WHERE e.event_id = n.event_id;
        ALTER TABLE {{.schema}}.outbox_event ALTER COLUMN seq SET NOT NULL;
        ALTER TABLE {{.schema}}.outbox_event ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY;
        PERFORM setval(pg_get_serial_sequence('{{.schema}}.outbox_event', 'seq'),
                       coalesce((SELECT max(seq) FROM {{.schema}}.outbox_event), 0) + 1, false);
        -- created_at is when a transaction began, not when it committed: the
        -- order of the rows numbered here is not known, and migration 025 says
        -- so on those that follow another unpublished row of their aggregate.
        EXECUTE format('COMMENT ON COLUMN {{.schema}}.outbox_event.seq IS %L',
                       'outboxtop: adopted through seq ' || coalesce((SELECT max(seq) FROM {{.schema}}.outbox_event), 0)
                       || ' (rows present at adoption, numbered by created_at and event_id)');
    END IF;
END
$seq$;

-- The other additions the design needs.
ALTER TABLE {{.schema}}.outbox_event
    ADD COLUMN IF NOT EXISTS topic text,
    ADD COLUMN IF NOT EXISTS headers jsonb,
    ADD COLUMN IF NOT EXISTS last_error text,
    ADD COLUMN IF NOT EXISTS failed_at timestamptz,
    ADD COLUMN IF NOT EXISTS kafka_topic text,
    ADD COLUMN IF NOT EXISTS kafka_partition integer,
    ADD COLUMN IF NOT EXISTS kafka_offset bigint,
    -- set on a replayed event: the event_id it replays
    ADD COLUMN IF NOT EXISTS replay_of uuid;

-- Ordered claim: ready events in insertion order. Failed rows are left out so a pile
-- of dead events is never rescanned. No lease column is indexed anywhere, which keeps
-- the claim's UPDATE (lease_token, lease_until, attempts) a HOT update.
CREATE INDEX IF NOT EXISTS outbox_claim_seq_idx
    ON {{.schema}}.outbox_event (seq)
    WHERE published_at IS NULL AND failed_at IS NULL;

-- Per-aggregate order: the head of each aggregate's unpublished events; blocked
-- aggregates; the console's aggregate filter.
CREATE INDEX IF NOT EXISTS outbox_aggregate_idx
    ON {{.schema}}.outbox_event (aggregate_type, aggregate_id, seq)
    WHERE published_at IS NULL;

-- Failed (dead) events: the console's Failed view and the ordered claim's blockers.
CREATE INDEX IF NOT EXISTS outbox_failed_idx
    ON {{.schema}}.outbox_event (failed_at, seq)
    WHERE published_at IS NULL AND failed_at IS NOT NULL;

-- Published history: recent rates, the Published view, archiving by age.
CREATE INDEX IF NOT EXISTS outbox_published_idx
    ON {{.schema}}.outbox_event (published_at)
    WHERE published_at IS NOT NULL;
