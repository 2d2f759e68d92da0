-- The one way an audit row is written: the id, the time and the database user come
-- from the column defaults. An actor that names no one is refused
-- (outboxtop_actor_check).
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_audit_write(
    p_actor text, p_action text, p_filter jsonb, p_event_ids uuid[], p_rows integer, p_reason text)
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    id bigint;
BEGIN
    PERFORM {{.schema}}.outboxtop_actor_check(p_actor);
    INSERT INTO {{.schema}}.outbox_audit (actor, action, filter, event_ids, rows, reason)
    VALUES (p_actor, p_action, coalesce(p_filter, '{}'), p_event_ids, p_rows, nullif(p_reason, ''))
    RETURNING audit_id INTO id;
    RETURN id;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_audit_write(text, text, jsonb, uuid[], integer, text) FROM PUBLIC;
