-- correct: a failed event (parked ones are failed too) is replaced by a
-- corrected copy. The copy is a new event (a fresh id, correction_of = the
-- original's id) with the original's aggregate, type, topic and headers, the
-- given payload, its attempts at 0, ready now, and the original's seq: it
-- takes the original's place in its aggregate's order, so the events that
-- waited behind the original go out after it. The original moves to the
-- archive, failed, its last_error saying who corrected it and why (the way
-- skip moves an event). One audit row names both ids, with the payload's diff
-- (outboxtop_jsonb_diff) computed here. Refused: a payload equal to the
-- original's (that is a retry), an event that is not failed, and an id the
-- archive holds already.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_correct(
    p_actor text, p_reason text, p_id uuid, p_payload jsonb, p_filter jsonb,
    OUT out_audit_id bigint, OUT out_rows integer, OUT out_event_ids uuid[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    o {{.schema}}.outbox_event%ROWTYPE;
    copy_id uuid := pg_catalog.gen_random_uuid();
    d jsonb;
BEGIN
    IF coalesce(pg_catalog.btrim(p_reason), '') = '' THEN
        RAISE EXCEPTION 'correct: a reason is required' USING ERRCODE = '22023';
    END IF;
    IF p_payload IS NULL THEN
        RAISE EXCEPTION 'correct: a payload is required' USING ERRCODE = '22023';
    END IF;
    PERFORM {{.schema}}.outboxtop_hold_bound('correct', p_actor, 1);
    SELECT * INTO o FROM {{.schema}}.outbox_event e WHERE e.event_id = p_id FOR UPDATE;
    IF NOT FOUND OR {{.schema}}.outboxtop_state(o.published_at, o.failed_at, o.lease_until, o.available_at) <> 'failed' THEN
        RAISE EXCEPTION 'correct: event % is not failed (only a failed or parked event is corrected)', p_id
            USING ERRCODE = '55000';
    END IF;
    IF o.payload = p_payload THEN
        RAISE EXCEPTION 'correct: the payload is unchanged (retry the event to send it again as it is)'
            USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT 1 FROM {{.schema}}.outbox_event_archive a WHERE a.event_id = p_id) THEN
        RAISE EXCEPTION 'correct: the archive already holds an event with id %; nothing was changed', p_id
            USING ERRCODE = '23505';
    END IF;
    d := {{.schema}}.outboxtop_jsonb_diff(o.payload, p_payload);
    DELETE FROM {{.schema}}.outbox_event e WHERE e.event_id = p_id;
    INSERT INTO {{.schema}}.outbox_event_archive (event_id, aggregate_type, aggregate_id, event_type,
        payload, created_at, available_at, attempts, lease_token, lease_until, published_at, seq, topic,
        headers, last_error, failed_at, kafka_topic, kafka_partition, kafka_offset, replay_of, lease_holder,
        correction_of)
    VALUES (o.event_id, o.aggregate_type, o.aggregate_id, o.event_type, o.payload, o.created_at,
        o.available_at, o.attempts, o.lease_token, o.lease_until, o.published_at, o.seq, o.topic, o.headers,
        'corrected by ' || p_actor || ' as ' || copy_id::text || ': ' || p_reason
            || coalesce(' (last error: ' || o.last_error || ')', ''),
        o.failed_at, o.kafka_topic, o.kafka_partition, o.kafka_offset, o.replay_of, o.lease_holder,
        o.correction_of);
    -- The original's seq, given explicitly: the commit-order trigger leaves a
    -- correction's seq alone.
    INSERT INTO {{.schema}}.outbox_event (event_id, seq, aggregate_type, aggregate_id, event_type, payload,
        topic, headers, correction_of)
    OVERRIDING SYSTEM VALUE
    VALUES (copy_id, o.seq, o.aggregate_type, o.aggregate_id, o.event_type, p_payload, o.topic, o.headers, p_id);
    out_rows := 1;
    out_event_ids := ARRAY[copy_id];
    out_audit_id := {{.schema}}.outboxtop_audit_write(p_actor, 'correct', p_filter, ARRAY[p_id, copy_id], 1, p_reason);
    UPDATE {{.schema}}.outbox_audit a SET diff = d WHERE a.audit_id = out_audit_id;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_correct(text, text, uuid, jsonb, jsonb) FROM PUBLIC;
