-- The relay heartbeat: one row per relay process, so "is any relay running, how
-- many, which one is stuck" has an answer even when a relay holds no lease (idle,
-- paused, waiting for Kafka).
--
-- A relay writes its row every --heartbeat-interval (default 5s) through
-- outboxtop_relay_beat (functions/), never directly: the function takes the time from the
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

-- Roles set up with `outboxtop grants` before this migration: a console or
-- operator role (one that may read outbox_audit) gets SELECT on the table, what the
-- current `outboxtop grants` prints; without it an upgraded console would show no
-- relays. The relay roles' EXECUTE on the beat is given where the function is
-- (functions/outboxtop_relay_beat.sql), when it is first created.
DO $heartbeat$
DECLARE
    r regrole;
BEGIN
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
