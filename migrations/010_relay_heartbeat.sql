-- The relay heartbeat: one row per relay process, so "is any relay running, how
-- many, which one is stuck" has an answer even when a relay holds no lease (idle,
-- paused, waiting for Kafka).
--
-- A relay writes its row every --heartbeat-interval (default 5s) through
-- outboxtop_relay_beat below, never directly: the function takes the time from the
-- database (seen_at, started_at: one clock with the console's now()) and the
-- database role from the session, so a relay role can only say "I, this holder,
-- am alive in this state now". No role has a write privilege on the table.
--
-- What a row means (inspect.RelaySeen):
--   state        what the relay said last: running, paused (an operator's pause),
--                draining (--drain), broker-down (Kafka unreachable: it backs off
--                as a whole), stopping (shutting down, finishing its batches) or
--                stopped (a clean exit wrote this as its last beat).
--   seen_at      its last beat. A row not stopped whose seen_at is older than 3 ×
--                interval_ms is "gone": the process died, froze, or lost its
--                database — readers show it so, whatever its state says.
--   started_at   this process's first beat (a restart under the same holder name
--                starts it again).
--   in_flight    events in the batches the relay had in flight at its last beat:
--                its live leases, known without reading outbox_event.
-- Clean-up: every beat deletes rows stopped more than an hour ago and any row not
-- seen for a day, so a fleet of restarting containers (a new holder each time)
-- leaves a bounded table; with no relay running, nothing is deleted and the last
-- rows stay, shown as gone with their age.
CREATE TABLE IF NOT EXISTS {{.schema}}.outbox_relay (
    holder      text PRIMARY KEY CHECK (length(holder) BETWEEN 1 AND 200),
    db_user     text NOT NULL,
    state       text NOT NULL CHECK (state IN ('running', 'paused', 'draining', 'broker-down', 'stopping', 'stopped')),
    started_at  timestamptz NOT NULL,
    seen_at     timestamptz NOT NULL,
    interval_ms integer NOT NULL CHECK (interval_ms > 0),
    in_flight   integer NOT NULL DEFAULT 0,
    version     text NOT NULL DEFAULT '',
    ordering    text NOT NULL DEFAULT '',
    batch_size  integer NOT NULL DEFAULT 0
);

-- One beat. p_started: the first beat of this process (started_at = now()). A
-- holder name another database role wrote keeps its row and the call returns
-- false: a relay role cannot take over the heartbeat of a relay running as
-- another role. Text is cut to bounds so a beat can never fail on length.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_relay_beat(
    p_holder text, p_state text, p_started boolean, p_interval_ms integer, p_in_flight integer,
    p_version text, p_ordering text, p_batch_size integer)
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    n integer;
BEGIN
    INSERT INTO {{.schema}}.outbox_relay AS r (holder, db_user, state, started_at, seen_at, interval_ms,
        in_flight, version, ordering, batch_size)
    VALUES (p_holder, session_user, p_state, now(), now(), p_interval_ms, greatest(p_in_flight, 0),
        left(coalesce(p_version, ''), 100), left(coalesce(p_ordering, ''), 20), greatest(p_batch_size, 0))
    ON CONFLICT (holder) DO UPDATE SET
        state = excluded.state, seen_at = excluded.seen_at, interval_ms = excluded.interval_ms,
        in_flight = excluded.in_flight, version = excluded.version, ordering = excluded.ordering,
        batch_size = excluded.batch_size,
        started_at = CASE WHEN p_started THEN excluded.started_at ELSE r.started_at END
    WHERE r.db_user = session_user;
    GET DIAGNOSTICS n = ROW_COUNT;
    DELETE FROM {{.schema}}.outbox_relay
    WHERE seen_at < now() - interval '1 day'
       OR (state = 'stopped' AND seen_at < now() - interval '1 hour');
    RETURN n = 1;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_relay_beat(text, text, boolean, integer, integer, text, text, integer)
FROM PUBLIC;

-- Roles set up with `outboxtop grants` before this migration: a relay role (one
-- that may update lease_token) gets EXECUTE on the beat, a console or operator
-- role (one that may read outbox_audit) gets SELECT on the table — what the
-- current `outboxtop grants` prints. Without this an upgraded relay would log
-- that its heartbeat is refused (it keeps publishing) and an upgraded console
-- would show no relays.
DO $heartbeat$
DECLARE
    r regrole;
BEGIN
    FOR r IN
        SELECT DISTINCT (a.acl).grantee::regrole
        FROM (SELECT aclexplode(attacl) AS acl FROM pg_attribute
              WHERE attrelid = '{{.schema}}.outbox_event'::regclass AND attname = 'lease_token'
                AND attacl IS NOT NULL) a
        WHERE (a.acl).privilege_type = 'UPDATE' AND (a.acl).grantee <> 0
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION {{.schema}}.outboxtop_relay_beat(text, text, boolean, integer, integer, text, text, integer) TO %s', r);
    END LOOP;
    FOR r IN
        SELECT DISTINCT (a.acl).grantee::regrole
        FROM (SELECT aclexplode(relacl) AS acl FROM pg_class
              WHERE oid = '{{.schema}}.outbox_audit'::regclass AND relacl IS NOT NULL) a
        WHERE (a.acl).privilege_type = 'SELECT' AND (a.acl).grantee <> 0
          AND (a.acl).grantee <> (SELECT relowner FROM pg_class WHERE oid = '{{.schema}}.outbox_audit'::regclass)
    LOOP
        EXECUTE format('GRANT SELECT ON {{.schema}}.outbox_relay TO %s', r);
    END LOOP;
END
$heartbeat$;
