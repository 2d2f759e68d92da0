-- terminate-backend: an operator ends a backend that holds the xmin horizon
-- (console T, outboxtop terminate-backend). The function ends it itself and
-- writes the audit row only once the backend has exited, so no row says a
-- backend was ended that was not, whatever the caller passes.
--
-- p_target is what the operator saw (pid, kind, user, application,
-- client_addr, backend_start, xact_start, age_seconds, xmin_age). Only a
-- backend of this database (or a walsender, which holds every database's
-- horizon), never this session's own, whose pid, backend_start and xact_start
-- are still the target's is signalled: a reused pid, or a session that moved on
-- to another transaction, is refused (55000), and a pid that is no such
-- backend (P0002). Who may end it is PostgreSQL's rule for
-- pg_terminate_backend, applied to the session's login role (session_user): a
-- superuser's backend, or one of no role, only a superuser; another role's
-- only with the privileges of pg_signal_backend or of that role (42501). The
-- signal is sent as this function's owner, which must be allowed it as well
-- (a superuser, or pg_signal_backend and pg_read_all_stats, which it needs to
-- see the backend's start).
--
-- It returns the audit row's id, or NULL when the backend had not exited 5 s
-- after the signal (no row). The row's filter is p_target with the backend's
-- identity (pid, user, application, client_addr, backend_start, xact_start) as
-- this function read it.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_audit_terminate(p_actor text, p_reason text, p_target jsonb)
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    target_pid integer;
    a record;
    ended boolean;
BEGIN
    IF p_target IS NULL OR pg_catalog.jsonb_typeof(p_target -> 'pid') IS DISTINCT FROM 'number'
            OR pg_catalog.jsonb_typeof(p_target -> 'backend_start') IS DISTINCT FROM 'string' THEN
        RAISE EXCEPTION 'terminate-backend: the target needs a pid and its backend_start' USING ERRCODE = '22023';
    END IF;
    PERFORM {{.schema}}.outboxtop_actor_check(p_actor);
    target_pid := (p_target ->> 'pid')::integer;
    IF target_pid = pg_catalog.pg_backend_pid() THEN
        RAISE EXCEPTION 'terminate-backend: pid % is this session''s own backend', target_pid USING ERRCODE = '22023';
    END IF;
    -- A fresh read of the backends, not this transaction's cached one.
    PERFORM pg_catalog.pg_stat_clear_snapshot();
    SELECT s.pid, s.usesysid, s.usename, s.application_name, s.client_addr, s.backend_start, s.xact_start INTO a
    FROM pg_catalog.pg_stat_activity s
    WHERE s.pid = target_pid
      AND (s.datid = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())
           OR s.backend_type = 'walsender');
    IF NOT FOUND THEN
        RAISE EXCEPTION 'terminate-backend: pid % is no backend of this database', target_pid USING ERRCODE = 'P0002';
    END IF;
    IF a.backend_start IS NULL THEN
        RAISE EXCEPTION 'terminate-backend: the owner of outboxtop''s functions, %, cannot see the start of pid %', current_user, target_pid
            USING ERRCODE = '42501', HINT = pg_catalog.format('GRANT pg_read_all_stats TO %I', current_user);
    END IF;
    IF a.backend_start IS DISTINCT FROM (p_target ->> 'backend_start')::timestamptz
            OR a.xact_start IS DISTINCT FROM (p_target ->> 'xact_start')::timestamptz THEN
        RAISE EXCEPTION 'terminate-backend: pid % is no longer the backend and transaction seen', target_pid USING ERRCODE = '55000';
    END IF;
    -- PostgreSQL's own rule (pg_signal_backend in signalfuncs.c), for the login role.
    IF NOT coalesce((SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = session_user), false)
            AND coalesce((SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.oid = a.usesysid), true) THEN
        RAISE EXCEPTION 'terminate-backend: pid % is a superuser''s backend (or one of no role): only a superuser may end it', target_pid
            USING ERRCODE = '42501';
    END IF;
    IF NOT (pg_catalog.pg_has_role(session_user, a.usesysid, 'USAGE')
            OR pg_catalog.pg_has_role(session_user, 'pg_signal_backend', 'USAGE')) THEN
        RAISE EXCEPTION 'terminate-backend: pid % is role %''s backend: ending it needs the privileges of pg_signal_backend or of that role', target_pid, a.usename
            USING ERRCODE = '42501', HINT = pg_catalog.format('GRANT pg_signal_backend TO %I', session_user);
    END IF;
    BEGIN
        ended := pg_catalog.pg_terminate_backend(target_pid, 5000);
    EXCEPTION WHEN insufficient_privilege THEN
        RAISE EXCEPTION 'terminate-backend: the owner of outboxtop''s functions, %, may not signal pid %', current_user, target_pid
            USING ERRCODE = '42501', HINT = pg_catalog.format('GRANT pg_signal_backend TO %I', current_user);
    END;
    IF NOT ended THEN
        RETURN NULL;
    END IF;
    RETURN {{.schema}}.outboxtop_audit_write(p_actor, 'terminate-backend', p_target || pg_catalog.jsonb_build_object(
        'pid', a.pid, 'user', a.usename, 'application', a.application_name, 'client_addr', pg_catalog.host(a.client_addr),
        'backend_start', a.backend_start, 'xact_start', a.xact_start), NULL, 0, p_reason);
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_audit_terminate(text, text, jsonb) FROM PUBLIC;
