-- The relay's housekeeping (--archive-after, --archive-retention): no audit row, as
-- it is configuration rather than a decision; one batch per call.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_archive_published(p_age interval, p_batch integer)
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    n integer;
BEGIN
    WITH moved AS (
        DELETE FROM {{.schema}}.outbox_event WHERE event_id IN (
            SELECT event_id FROM {{.schema}}.outbox_event
            WHERE published_at IS NOT NULL AND published_at <= pg_catalog.now() - p_age
            ORDER BY published_at LIMIT p_batch FOR UPDATE SKIP LOCKED)
        AND published_at IS NOT NULL
        RETURNING *
    ), archived AS (
        INSERT INTO {{.schema}}.outbox_event_archive (event_id, aggregate_type, aggregate_id, event_type,
            payload, created_at, available_at, attempts, lease_token, lease_until, published_at, seq, topic,
            headers, last_error, failed_at, kafka_topic, kafka_partition, kafka_offset, replay_of, lease_holder)
        SELECT event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
            attempts, lease_token, lease_until, published_at, seq, topic, headers, last_error, failed_at,
            kafka_topic, kafka_partition, kafka_offset, replay_of, lease_holder
        FROM moved
        ON CONFLICT (event_id) DO UPDATE SET
            aggregate_type = excluded.aggregate_type, aggregate_id = excluded.aggregate_id,
            event_type = excluded.event_type, payload = excluded.payload, created_at = excluded.created_at,
            available_at = excluded.available_at, attempts = excluded.attempts,
            lease_token = excluded.lease_token, lease_until = excluded.lease_until,
            published_at = excluded.published_at, seq = excluded.seq, topic = excluded.topic,
            headers = excluded.headers, last_error = excluded.last_error, failed_at = excluded.failed_at,
            kafka_topic = excluded.kafka_topic, kafka_partition = excluded.kafka_partition,
            kafka_offset = excluded.kafka_offset, replay_of = excluded.replay_of,
            lease_holder = excluded.lease_holder, archived_at = pg_catalog.now()
        RETURNING 1
    )
    SELECT pg_catalog.count(*) INTO n FROM archived;
    RETURN n;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_archive_published(interval, integer) FROM PUBLIC;
