-- The relay's housekeeping (--archive-after, --archive-retention): no audit row, as
-- it is configuration rather than a decision; one batch per call. A published row
-- whose id the archive holds already (a new event given an archived event's id)
-- is never selected: it stays in the outbox, published, and the archived row
-- keeps its history; an operator's archive reports it as refused.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_archive_published(p_age interval, p_batch integer)
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    n integer;
    moved_n integer;
BEGIN
    IF p_age IS NULL OR p_age < interval '0' OR p_batch IS NULL OR p_batch < 1 THEN
        RAISE EXCEPTION 'archive: the age must not be negative and the batch must be positive (got %, %)', p_age, p_batch
            USING ERRCODE = '22023';
    END IF;
    WITH moved AS (
        DELETE FROM {{.schema}}.outbox_event WHERE event_id IN (
            SELECT o.event_id FROM {{.schema}}.outbox_event o
            WHERE published_at IS NOT NULL AND published_at <= pg_catalog.now() - p_age
              AND NOT EXISTS (SELECT 1 FROM {{.schema}}.outbox_event_archive a WHERE a.event_id = o.event_id)
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
        ON CONFLICT (event_id) DO NOTHING
        RETURNING 1
    )
    SELECT pg_catalog.count(*), (SELECT pg_catalog.count(*) FROM moved) INTO n, moved_n FROM archived;
    -- An archive row that appeared since the batch was chosen: the deleted live
    -- rows would be lost, so this batch changes nothing.
    IF n <> moved_n THEN
        RAISE EXCEPTION 'archive: % events were archived by another session meanwhile; nothing was changed',
            moved_n - n USING ERRCODE = '40001';
    END IF;
    RETURN n;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_archive_published(interval, integer) FROM PUBLIC;
