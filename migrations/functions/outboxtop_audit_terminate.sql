-- terminate-backend: an operator ended a backend that held the xmin horizon
-- (console T, outboxtop terminate-backend). The signal is sent by the operator's
-- own role with pg_terminate_backend, so PostgreSQL decides who may end whom
-- (pg_signal_backend, the same role, never a superuser's backend); this function
-- only writes the audit row, once the backend is gone: an audit row for a pid
-- still running is refused, so the row does not say a backend was ended while it
-- runs. p_target is what the operator saw (pid, kind, user, application,
-- client_addr, backend_start, xact_start, age_seconds, xmin_age), kept as the
-- row's filter.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_audit_terminate(p_actor text, p_reason text, p_target jsonb)
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    target_pid integer;
BEGIN
    IF p_target IS NULL OR pg_catalog.jsonb_typeof(p_target -> 'pid') IS DISTINCT FROM 'number' THEN
        RAISE EXCEPTION 'terminate-backend: the target needs a pid' USING ERRCODE = '22023';
    END IF;
    target_pid := (p_target ->> 'pid')::integer;
    -- A fresh read of the backends, not this transaction's cached one.
    PERFORM pg_catalog.pg_stat_clear_snapshot();
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity a WHERE a.pid = target_pid) THEN
        RAISE EXCEPTION 'terminate-backend: pid % is still running: audit it once it has ended', target_pid
            USING ERRCODE = '55000';
    END IF;
    RETURN {{.schema}}.outboxtop_audit_write(p_actor, 'terminate-backend', p_target, NULL, 0, p_reason);
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_audit_terminate(text, text, jsonb) FROM PUBLIC;
