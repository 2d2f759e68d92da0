-- Archived published rows: the same columns as outbox_event. seq is a plain bigint
-- here so an archived row keeps the seq it had.
CREATE TABLE IF NOT EXISTS {{.schema}}.outbox_event_archive (
    event_id        uuid PRIMARY KEY,
    aggregate_type  text NOT NULL,
    aggregate_id    text NOT NULL,
    event_type      text NOT NULL,
    payload         jsonb NOT NULL,
    created_at      timestamptz NOT NULL,
    available_at    timestamptz NOT NULL,
    attempts        integer NOT NULL,
    lease_token     uuid,
    lease_until     timestamptz,
    published_at    timestamptz,
    seq             bigint NOT NULL,
    topic           text,
    headers         jsonb,
    last_error      text,
    failed_at       timestamptz,
    kafka_topic     text,
    kafka_partition integer,
    kafka_offset    bigint,
    replay_of       uuid,
    archived_at     timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS outbox_event_archive_archived_at_idx
    ON {{.schema}}.outbox_event_archive (archived_at);

-- One row per operator action.
CREATE TABLE IF NOT EXISTS {{.schema}}.outbox_audit (
    audit_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT now(),
    actor      text NOT NULL,
    action     text NOT NULL,
    filter     jsonb NOT NULL DEFAULT '{}',
    event_ids  uuid[],
    rows       integer NOT NULL,
    reason     text
);

CREATE INDEX IF NOT EXISTS outbox_audit_at_idx ON {{.schema}}.outbox_audit (at);
