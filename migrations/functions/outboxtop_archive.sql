-- archive: published events move to the archive unchanged. The CLI archives in
-- batches, one transaction each: the first call (p_audit_id NULL) writes the audit
-- row, later calls of the same action add their rows to it, so the audit row always
-- counts exactly what has been moved.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_archive(
    p_actor text, p_reason text, p_ids uuid[], p_filter jsonb, p_audit_id bigint,
    OUT out_audit_id bigint, OUT out_rows integer, OUT out_event_ids uuid[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    updated integer;
BEGIN
    WITH moved AS (
        DELETE FROM {{.schema}}.outbox_event e
        WHERE e.event_id = ANY (p_ids) AND e.published_at IS NOT NULL
        RETURNING e.*
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
        RETURNING event_id, seq
    )
    SELECT pg_catalog.count(*), coalesce((pg_catalog.array_agg(event_id ORDER BY seq))[1:1000], '{}')
    INTO out_rows, out_event_ids FROM archived;
    IF p_audit_id IS NULL THEN
        out_audit_id := {{.schema}}.outboxtop_audit_write(p_actor, 'archive', p_filter, out_event_ids, out_rows, p_reason);
        RETURN;
    END IF;
    UPDATE {{.schema}}.outbox_audit a
    SET rows = a.rows + out_rows, event_ids = (pg_catalog.array_cat(coalesce(a.event_ids, '{}'), out_event_ids))[1:1000]
    WHERE a.audit_id = p_audit_id AND a.action = 'archive' AND a.actor = p_actor AND a.db_user = session_user;
    GET DIAGNOSTICS updated = ROW_COUNT;
    IF updated <> 1 THEN
        RAISE EXCEPTION 'archive: audit row % is not this archive''s', p_audit_id USING ERRCODE = '22023';
    END IF;
    out_audit_id := p_audit_id;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_archive(text, text, uuid[], jsonb, bigint) FROM PUBLIC;
