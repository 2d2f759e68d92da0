-- pause and resume of a relay are decisions like the actions: recorded with the
-- actor. The relay's paused flag lives in the process, so this only writes the row.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_audit_relay(p_actor text, p_action text)
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
BEGIN
    IF p_action NOT IN ('pause', 'resume') THEN
        RAISE EXCEPTION 'not a relay action: %', p_action USING ERRCODE = '22023';
    END IF;
    RETURN {{.schema}}.outboxtop_audit_write(p_actor, p_action, '{}', NULL, 0, NULL);
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_audit_relay(text, text) FROM PUBLIC;
