-- replay: published events (in the outbox) and archived ones go back into the
-- outbox. Under the same id a replay gets a new seq (the end of its aggregate) and
-- starts delivery over; with p_new_id it is a copy under a fresh id. Archived events
-- already back in the outbox under their id are left alone.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_replay(
    p_actor text, p_reason text, p_ids uuid[], p_states text[], p_filter jsonb, p_new_id boolean,
    OUT out_audit_id bigint, OUT out_rows integer, OUT out_event_ids uuid[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    st text[] := {{.schema}}.outboxtop_action_states('replay', p_states);
    ids uuid[] := '{}';
    more uuid[];
BEGIN
    PERFORM {{.schema}}.outboxtop_hold_bound('replay', p_actor, pg_catalog.cardinality(p_ids));
    IF 'published' = ANY (st) THEN
        IF p_new_id THEN
            WITH ins AS (
                INSERT INTO {{.schema}}.outbox_event (event_id, aggregate_type, aggregate_id, event_type,
                    payload, topic, headers, replay_of)
                SELECT pg_catalog.gen_random_uuid(), aggregate_type, aggregate_id, event_type, payload, topic, headers, event_id
                FROM {{.schema}}.outbox_event
                WHERE event_id = ANY (p_ids) AND published_at IS NOT NULL ORDER BY seq
                RETURNING event_id, seq
            ) SELECT coalesce(pg_catalog.array_agg(event_id ORDER BY seq), '{}') INTO more FROM ins;
        ELSE
            WITH moved AS (
                DELETE FROM {{.schema}}.outbox_event
                WHERE event_id = ANY (p_ids) AND published_at IS NOT NULL
                RETURNING *
            ), ins AS (
                INSERT INTO {{.schema}}.outbox_event (event_id, aggregate_type, aggregate_id, event_type,
                    payload, created_at, available_at, attempts, topic, headers, replay_of)
                SELECT event_id, aggregate_type, aggregate_id, event_type, payload, created_at, pg_catalog.now(),
                    0, topic, headers, event_id
                FROM moved ORDER BY seq
                RETURNING event_id, seq
            ) SELECT coalesce(pg_catalog.array_agg(event_id ORDER BY seq), '{}') INTO more FROM ins;
        END IF;
        ids := pg_catalog.array_cat(ids, more);
    END IF;
    IF 'archived' = ANY (st) THEN
        IF p_new_id THEN
            WITH ins AS (
                INSERT INTO {{.schema}}.outbox_event (event_id, aggregate_type, aggregate_id, event_type,
                    payload, topic, headers, replay_of)
                SELECT pg_catalog.gen_random_uuid(), aggregate_type, aggregate_id, event_type, payload, topic, headers, event_id
                FROM {{.schema}}.outbox_event_archive
                WHERE event_id = ANY (p_ids) ORDER BY seq
                RETURNING event_id, seq
            ) SELECT coalesce(pg_catalog.array_agg(event_id ORDER BY seq), '{}') INTO more FROM ins;
        ELSE
            WITH moved AS (
                DELETE FROM {{.schema}}.outbox_event_archive a
                WHERE a.event_id = ANY (p_ids)
                  AND NOT EXISTS (SELECT 1 FROM {{.schema}}.outbox_event o WHERE o.event_id = a.event_id)
                RETURNING a.*
            ), ins AS (
                INSERT INTO {{.schema}}.outbox_event (event_id, aggregate_type, aggregate_id, event_type,
                    payload, created_at, available_at, attempts, topic, headers, replay_of)
                SELECT event_id, aggregate_type, aggregate_id, event_type, payload, created_at, pg_catalog.now(),
                    0, topic, headers, event_id
                FROM moved ORDER BY seq
                RETURNING event_id, seq
            ) SELECT coalesce(pg_catalog.array_agg(event_id ORDER BY seq), '{}') INTO more FROM ins;
        END IF;
        ids := pg_catalog.array_cat(ids, more);
    END IF;
    out_rows := pg_catalog.cardinality(ids);
    out_event_ids := ids[1:1000];
    out_audit_id := {{.schema}}.outboxtop_audit_write(p_actor, 'replay', p_filter, out_event_ids, out_rows, p_reason);
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_replay(text, text, uuid[], text[], jsonb, boolean) FROM PUBLIC;
