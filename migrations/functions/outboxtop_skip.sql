-- skip: failed or scheduled events that head their aggregate move to the archive,
-- failed, with the reason; the aggregate's next events are no longer blocked. An
-- event whose id the archive holds already is refused (it stays, and the audit
-- row's refused counts it): the archived row is history and is never replaced.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_skip(
    p_actor text, p_reason text, p_ids uuid[], p_states text[], p_filter jsonb,
    OUT out_audit_id bigint, OUT out_rows integer, OUT out_event_ids uuid[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    st text[] := {{.schema}}.outboxtop_action_states('skip', p_states);
    todo uuid[];
    moved_n integer;
    refused_n integer;
BEGIN
    IF coalesce(pg_catalog.btrim(p_reason), '') = '' THEN
        RAISE EXCEPTION 'skip: a reason is required' USING ERRCODE = '22023';
    END IF;
    PERFORM {{.schema}}.outboxtop_hold_bound('skip', p_actor, pg_catalog.cardinality(p_ids));
    -- Only the events in the action's states are locked and changed: a caller
    -- holding its transaction open holds those, not every id it passed, and a
    -- row that enters the states meanwhile is left alone (it was not seen).
    SELECT coalesce(pg_catalog.array_agg(e.event_id), '{}') INTO todo FROM {{.schema}}.outbox_event e
    WHERE e.event_id = ANY (p_ids)
      AND {{.schema}}.outboxtop_state(e.published_at, e.failed_at, e.lease_until, e.available_at) = ANY (st);
    PERFORM {{.schema}}.outboxtop_lock_events(todo);
    -- One statement, no temporary table: a table the caller created in pg_temp
    -- beforehand must never be what this function writes to.
    WITH moved AS (
        DELETE FROM {{.schema}}.outbox_event e
        WHERE e.event_id = ANY (todo)
          AND {{.schema}}.outboxtop_state(e.published_at, e.failed_at, e.lease_until, e.available_at) = ANY (st)
          AND NOT EXISTS (SELECT 1 FROM {{.schema}}.outbox_event p
              WHERE p.published_at IS NULL AND p.aggregate_type = e.aggregate_type
                AND p.aggregate_id = e.aggregate_id AND p.seq < e.seq)
          AND NOT EXISTS (SELECT 1 FROM {{.schema}}.outbox_event_archive a WHERE a.event_id = e.event_id)
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
        ON CONFLICT (event_id) DO NOTHING
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
    SELECT pg_catalog.count(*), coalesce((pg_catalog.array_agg(m.event_id ORDER BY m.seq))[1:1000], '{}'),
        (SELECT pg_catalog.count(*) FROM moved)
    INTO out_rows, out_event_ids, moved_n FROM moved m JOIN archived a USING (event_id);
    -- An archive row that appeared meanwhile: the deleted live row would be lost.
    IF moved_n <> out_rows THEN
        RAISE EXCEPTION 'skip: % events were archived by another session meanwhile; nothing was changed, try again',
            moved_n - out_rows USING ERRCODE = '40001';
    END IF;
    SELECT pg_catalog.count(*) INTO refused_n FROM {{.schema}}.outbox_event e
    WHERE e.event_id = ANY (p_ids)
      AND {{.schema}}.outboxtop_state(e.published_at, e.failed_at, e.lease_until, e.available_at) = ANY (st)
      AND EXISTS (SELECT 1 FROM {{.schema}}.outbox_event_archive a WHERE a.event_id = e.event_id);
    out_audit_id := {{.schema}}.outboxtop_audit_write(p_actor, 'skip', p_filter, out_event_ids, out_rows, p_reason);
    IF refused_n > 0 THEN
        UPDATE {{.schema}}.outbox_audit a SET refused = refused_n WHERE a.audit_id = out_audit_id;
    END IF;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_skip(text, text, uuid[], text[], jsonb) FROM PUBLIC;
