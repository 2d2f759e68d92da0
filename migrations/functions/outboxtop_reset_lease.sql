-- reset-lease: a leased event's lease ends now. The token is kept: its holder can
-- still mark what it published, which saves a duplicate; the next claim replaces it.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_reset_lease(
    p_actor text, p_reason text, p_ids uuid[], p_states text[], p_filter jsonb,
    OUT out_audit_id bigint, OUT out_rows integer, OUT out_event_ids uuid[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    st text[] := {{.schema}}.outboxtop_action_states('reset-lease', p_states);
    todo uuid[];
BEGIN
    PERFORM {{.schema}}.outboxtop_hold_bound('reset-lease', p_actor, pg_catalog.cardinality(p_ids));
    -- Only the events in the action's states are locked and changed: a caller
    -- holding its transaction open holds those, not every id it passed, and a
    -- row that enters the states meanwhile is left alone (it was not seen).
    SELECT coalesce(pg_catalog.array_agg(e.event_id), '{}') INTO todo FROM {{.schema}}.outbox_event e
    WHERE e.event_id = ANY (p_ids)
      AND {{.schema}}.outboxtop_state(e.published_at, e.failed_at, e.lease_until, e.available_at) = ANY (st);
    PERFORM {{.schema}}.outboxtop_lock_events(todo);
    WITH changed AS (
        UPDATE {{.schema}}.outbox_event e SET lease_until = pg_catalog.now()
        WHERE e.event_id = ANY (todo)
          AND {{.schema}}.outboxtop_state(e.published_at, e.failed_at, e.lease_until, e.available_at) = ANY (st)
        RETURNING e.event_id, e.seq
    )
    SELECT pg_catalog.count(*), coalesce((pg_catalog.array_agg(event_id ORDER BY seq))[1:1000], '{}')
    INTO out_rows, out_event_ids FROM changed;
    out_audit_id := {{.schema}}.outboxtop_audit_write(p_actor, 'reset-lease', p_filter, out_event_ids, out_rows, p_reason);
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_reset_lease(text, text, uuid[], text[], jsonb) FROM PUBLIC;
