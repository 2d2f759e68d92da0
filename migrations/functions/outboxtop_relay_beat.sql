-- One beat. p_started: the first beat of this process (started_at = now()). A
-- holder name another database role wrote keeps its row and the call returns
-- false: a relay role cannot take over the heartbeat of a relay running as
-- another role. Text is cut to bounds so a beat can never fail on length; an
-- interval past an hour is refused.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_relay_beat(
    p_holder text, p_state text, p_started boolean, p_interval_ms integer, p_in_flight integer,
    p_version text, p_ordering text, p_batch_size integer)
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    n integer;
BEGIN
    -- What --heartbeat-interval allows (100 ms to 1 h; 1 ms accepted): readers
    -- call a relay gone after three intervals, so a larger one would keep a dead
    -- relay "running" for days.
    IF p_interval_ms IS NULL OR p_interval_ms < 1 OR p_interval_ms > 3600000 THEN
        RAISE EXCEPTION 'heartbeat interval % ms is out of range (1 to 3600000 ms: at most an hour)', p_interval_ms
            USING ERRCODE = '22023';
    END IF;
    IF p_in_flight IS NULL OR p_batch_size IS NULL THEN
        RAISE EXCEPTION 'heartbeat: in-flight and batch size are required' USING ERRCODE = '22023';
    END IF;
    INSERT INTO {{.schema}}.outbox_relay AS r (holder, db_user, state, started_at, seen_at, interval_ms,
        in_flight, version, ordering, batch_size)
    VALUES (p_holder, session_user, p_state, pg_catalog.now(), pg_catalog.now(), p_interval_ms, greatest(p_in_flight, 0),
        pg_catalog.left(coalesce(p_version, ''), 100), pg_catalog.left(coalesce(p_ordering, ''), 20), greatest(p_batch_size, 0))
    ON CONFLICT (holder) DO UPDATE SET
        state = excluded.state, seen_at = excluded.seen_at, interval_ms = excluded.interval_ms,
        in_flight = excluded.in_flight, version = excluded.version, ordering = excluded.ordering,
        batch_size = excluded.batch_size,
        started_at = CASE WHEN p_started THEN excluded.started_at ELSE r.started_at END
    WHERE r.db_user = session_user;
    GET DIAGNOSTICS n = ROW_COUNT;
    DELETE FROM {{.schema}}.outbox_relay
    WHERE seen_at < pg_catalog.now() - interval '1 day'
       OR (state = 'stopped' AND seen_at < pg_catalog.now() - interval '1 hour');
    RETURN n = 1;
END;
$$;

-- The first time the function exists (a database upgraded from before the
-- heartbeat, whose proacl is still NULL): roles set up with `outboxtop grants`
-- before it get what the current `outboxtop grants` prints, a relay role (one that
-- may update lease_token) EXECUTE on the beat. Without this an upgraded relay would
-- log that its heartbeat is refused (it keeps publishing). Later runs leave the
-- grants as they are: a revocation stays.
DO $heartbeat$
DECLARE
    r regrole;
BEGIN
    IF (SELECT proacl FROM pg_catalog.pg_proc
        WHERE oid = '{{.schema}}.outboxtop_relay_beat(text, text, boolean, integer, integer, text, text, integer)'::regprocedure) IS NOT NULL THEN
        RETURN;
    END IF;
    REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_relay_beat(text, text, boolean, integer, integer, text, text, integer)
    FROM PUBLIC;
    FOR r IN
        SELECT DISTINCT (a.acl).grantee::regrole
        FROM (SELECT pg_catalog.aclexplode(attacl) AS acl FROM pg_catalog.pg_attribute
              WHERE attrelid = '{{.schema}}.outbox_event'::regclass AND attname = 'lease_token'
                AND attacl IS NOT NULL) a
        WHERE (a.acl).privilege_type = 'UPDATE' AND (a.acl).grantee <> 0::oid
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION {{.schema}}.outboxtop_relay_beat(text, text, boolean, integer, integer, text, text, integer) TO %s', r);
    END LOOP;
END
$heartbeat$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_relay_beat(text, text, boolean, integer, integer, text, text, integer)
FROM PUBLIC;
