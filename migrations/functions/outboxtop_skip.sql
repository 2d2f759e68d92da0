-- skip: failed or scheduled events that head their aggregate move to the archive,
-- failed, with the reason; the aggregate's next events are no longer blocked.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_skip(
    p_actor text, p_reason text, p_ids uuid[], p_states text[], p_filter jsonb,
    OUT out_audit_id bigint, OUT out_rows integer, OUT out_event_ids uuid[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    st text[] := {{.schema}}.outboxtop_action_states('skip', p_states);
BEGIN
    IF coalesce(pg_catalog.btrim(p_reason), '') = '' THEN
        RAISE EXCEPTION 'skip: a reason is required' USING ERRCODE = '22023';
    END IF;
    PERFORM {{.schema}}.outboxtop_lock_events(p_ids);
    -- One statement, no temporary table: a table the caller created in pg_temp
    -- beforehand must never be what this function writes to.
    WITH moved AS (
        DELETE FROM {{.schema}}.outbox_event e
        WHERE e.event_id = ANY (p_ids)
          AND {{.schema}}.outboxtop_state(e.published_at, e.failed_at, e.lease_until, e.available_at) = ANY (st)
          AND NOT EXISTS (SELECT 1 FROM {{.schema}}.outbox_event p
              WHERE p.published_at IS NULL AND p.aggregate_type = e.aggregate_type
                AND p.aggregate_id = e.aggregate_id AND p.seq < e.seq)
        RETURNING e.*
    ), archived AS (
        INSERT INTO {{.schema}}.outbox_event_archive (event_id, aggregate_type, aggregate_id, event_type,
            payload, created_at, available_at, attempts, lease_token, lease_until, published_at, seq, topic,
            headers, last_error, failed_at, kafka_topic, kafka_partition, kafka_offset, replay_of, lease_holder)
        SELECT event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
            attempts, lease_token, lease_until, published_at, seq, topic, headers,
            'skipped by ' || p_actor || ': ' || p_reason || coalesce(' (last error: ' || last_error || ')', ''),
            coalesce(failed_at, pg_catalog.now()), kafka_topic, kafka_partition, kafka_offset, replay_of, lease_holder
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
        RETURNING event_id
    ), unblocked AS (
        -- The rows that waited behind a skipped event may be claimed again.
        -- A row another session holds is left to the relay's sweep: waiting for
        -- it here, in no particular order, could deadlock.
        UPDATE {{.schema}}.outbox_event e SET blocked = false
        WHERE e.event_id IN (
            SELECT w.event_id FROM {{.schema}}.outbox_event w
            WHERE w.blocked AND w.published_at IS NULL
              AND (w.aggregate_type, w.aggregate_id) IN (SELECT aggregate_type, aggregate_id FROM moved)
              AND w.event_id NOT IN (SELECT event_id FROM moved)
            FOR UPDATE SKIP LOCKED)
        RETURNING 1
    )
    SELECT pg_catalog.count(*), coalesce((pg_catalog.array_agg(m.event_id ORDER BY m.seq))[1:1000], '{}')
    INTO out_rows, out_event_ids FROM moved m JOIN archived a USING (event_id);
    out_audit_id := {{.schema}}.outboxtop_audit_write(p_actor, 'skip', p_filter, out_event_ids, out_rows, p_reason);
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_skip(text, text, uuid[], text[], jsonb) FROM PUBLIC;
