-- The operator actions lock their events in seq order (the soak on CI:
-- `reset-lease: ERROR: deadlock detected`).
--
-- An action locked its rows in whatever order its plan read them (event_id or
-- physical order), so two actions on overlapping events, or an action and the
-- relay's unblock after a mark, could each hold a row the other waited for. Now
-- each action calls outboxtop_lock_events first, which locks in seq order, as
-- the relay's unblock does (relay/sql/unblock_after.sql): statements that lock
-- in one order wait for each other in turn, never in a circle. The relay's
-- claim, renew, release and sweeps never wait for a row lock (SKIP LOCKED), and
-- neither does skip's unblocking of the rows behind what it skipped (below).
-- The relay's mark and settle still lock in their plan's order (see relay's
-- package doc for why): an action on a batch whose mark is running can still
-- deadlock with it, and each side then does its statement again.
--
-- archive and replay touch only published and archived rows, which no relay
-- statement waits for; they are unchanged. CREATE OR REPLACE keeps the
-- functions' owner and EXECUTE grants, so no grant has to be run again.

-- Locks the given events, in seq order, waiting for each: all of them, whatever
-- their state, so that no row the action then changes is locked out of order (one
-- that entered the action's states meanwhile included). Internal: called by the
-- SECURITY DEFINER actions below (as the schema's owner), granted to no one.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_lock_events(p_ids uuid[])
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
BEGIN
    -- PERFORM runs the query to its end: every row is locked, as the sort
    -- hands them out.
    PERFORM 1 FROM {{.schema}}.outbox_event e
    WHERE e.event_id = ANY (p_ids)
    ORDER BY e.seq
    FOR UPDATE;
END;
$$;
REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_lock_events(uuid[]) FROM PUBLIC;

-- The actions of 008 (skip as 009 left it), each now locking its events first.

CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_retry(
    p_actor text, p_reason text, p_ids uuid[], p_states text[], p_filter jsonb,
    OUT out_audit_id bigint, OUT out_rows integer, OUT out_event_ids uuid[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    st text[] := {{.schema}}.outboxtop_action_states('retry', p_states);
BEGIN
    PERFORM {{.schema}}.outboxtop_lock_events(p_ids);
    WITH changed AS (
        UPDATE {{.schema}}.outbox_event e
        SET available_at = now(), lease_token = NULL, lease_until = NULL,
            attempts = CASE WHEN e.failed_at IS NOT NULL THEN 0 ELSE e.attempts END, failed_at = NULL
        WHERE e.event_id = ANY (p_ids)
          AND {{.schema}}.outboxtop_state(e.published_at, e.failed_at, e.lease_until, e.available_at) = ANY (st)
        RETURNING e.event_id, e.seq
    )
    SELECT count(*), coalesce((array_agg(event_id ORDER BY seq))[1:1000], '{}')
    INTO out_rows, out_event_ids FROM changed;
    out_audit_id := {{.schema}}.outboxtop_audit_write(p_actor, 'retry', p_filter, out_event_ids, out_rows, p_reason);
END;
$$;

CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_reset_lease(
    p_actor text, p_reason text, p_ids uuid[], p_states text[], p_filter jsonb,
    OUT out_audit_id bigint, OUT out_rows integer, OUT out_event_ids uuid[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    st text[] := {{.schema}}.outboxtop_action_states('reset-lease', p_states);
BEGIN
    PERFORM {{.schema}}.outboxtop_lock_events(p_ids);
    WITH changed AS (
        UPDATE {{.schema}}.outbox_event e SET lease_until = now()
        WHERE e.event_id = ANY (p_ids)
          AND {{.schema}}.outboxtop_state(e.published_at, e.failed_at, e.lease_until, e.available_at) = ANY (st)
        RETURNING e.event_id, e.seq
    )
    SELECT count(*), coalesce((array_agg(event_id ORDER BY seq))[1:1000], '{}')
    INTO out_rows, out_event_ids FROM changed;
    out_audit_id := {{.schema}}.outboxtop_audit_write(p_actor, 'reset-lease', p_filter, out_event_ids, out_rows, p_reason);
END;
$$;

CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_park(
    p_actor text, p_reason text, p_ids uuid[], p_states text[], p_filter jsonb,
    OUT out_audit_id bigint, OUT out_rows integer, OUT out_event_ids uuid[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    st text[] := {{.schema}}.outboxtop_action_states('park', p_states);
BEGIN
    IF coalesce(btrim(p_reason), '') = '' THEN
        RAISE EXCEPTION 'park: a reason is required' USING ERRCODE = '22023';
    END IF;
    PERFORM {{.schema}}.outboxtop_lock_events(p_ids);
    WITH changed AS (
        UPDATE {{.schema}}.outbox_event e
        SET failed_at = now(), last_error = 'parked by ' || p_actor || ': ' || p_reason
        WHERE e.event_id = ANY (p_ids)
          AND {{.schema}}.outboxtop_state(e.published_at, e.failed_at, e.lease_until, e.available_at) = ANY (st)
        RETURNING e.event_id, e.seq
    )
    SELECT count(*), coalesce((array_agg(event_id ORDER BY seq))[1:1000], '{}')
    INTO out_rows, out_event_ids FROM changed;
    out_audit_id := {{.schema}}.outboxtop_audit_write(p_actor, 'park', p_filter, out_event_ids, out_rows, p_reason);
END;
$$;

CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_skip(
    p_actor text, p_reason text, p_ids uuid[], p_states text[], p_filter jsonb,
    OUT out_audit_id bigint, OUT out_rows integer, OUT out_event_ids uuid[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    st text[] := {{.schema}}.outboxtop_action_states('skip', p_states);
BEGIN
    IF coalesce(btrim(p_reason), '') = '' THEN
        RAISE EXCEPTION 'skip: a reason is required' USING ERRCODE = '22023';
    END IF;
    PERFORM {{.schema}}.outboxtop_lock_events(p_ids);
    -- One statement, no temporary table: a table the caller created in pg_temp
    -- beforehand must never be what this function writes to.
    WITH moved AS (
        DELETE FROM {{.schema}}.outbox_event e
        WHERE e.event_id = ANY (p_ids)
          AND {{.schema}}.outboxtop_state(e.published_at, e.failed_at, e.lease_until, e.available_at) = ANY (st)
          AND NOT EXISTS (SELECT 1 FROM {{.schema}}.outbox_event p
              WHERE p.published_at IS NULL AND p.aggregate_type = e.aggregate_type
                AND p.aggregate_id = e.aggregate_id AND p.seq < e.seq)
        RETURNING e.*
    ), archived AS (
        INSERT INTO {{.schema}}.outbox_event_archive (event_id, aggregate_type, aggregate_id, event_type,
            payload, created_at, available_at, attempts, lease_token, lease_until, published_at, seq, topic,
            headers, last_error, failed_at, kafka_topic, kafka_partition, kafka_offset, replay_of, lease_holder)
        SELECT event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
            attempts, lease_token, lease_until, published_at, seq, topic, headers,
            'skipped by ' || p_actor || ': ' || p_reason || coalesce(' (last error: ' || last_error || ')', ''),
            coalesce(failed_at, now()), kafka_topic, kafka_partition, kafka_offset, replay_of, lease_holder
        FROM moved
        ON CONFLICT (event_id) DO UPDATE SET
            aggregate_type = excluded.aggregate_type, aggregate_id = excluded.aggregate_id,
            event_type = excluded.event_type, payload = excluded.payload, created_at = excluded.created_at,
            available_at = excluded.available_at, attempts = excluded.attempts,
            lease_token = excluded.lease_token, lease_until = excluded.lease_until,
            published_at = excluded.published_at, seq = excluded.seq, topic = excluded.topic,
            headers = excluded.headers, last_error = excluded.last_error, failed_at = excluded.failed_at,
            kafka_topic = excluded.kafka_topic, kafka_partition = excluded.kafka_partition,
            kafka_offset = excluded.kafka_offset, replay_of = excluded.replay_of,
            lease_holder = excluded.lease_holder, archived_at = now()
        RETURNING event_id
    ), unblocked AS (
        -- The rows that waited behind a skipped event may be claimed again.
        -- A row another session holds is left to the relay's sweep: waiting for
        -- it here, in no particular order, could deadlock.
        UPDATE {{.schema}}.outbox_event e SET blocked = false
        WHERE e.event_id IN (
            SELECT w.event_id FROM {{.schema}}.outbox_event w
            WHERE w.blocked AND w.published_at IS NULL
              AND (w.aggregate_type, w.aggregate_id) IN (SELECT aggregate_type, aggregate_id FROM moved)
              AND w.event_id NOT IN (SELECT event_id FROM moved)
            FOR UPDATE SKIP LOCKED)
        RETURNING 1
    )
    SELECT count(*), coalesce((array_agg(m.event_id ORDER BY m.seq))[1:1000], '{}')
    INTO out_rows, out_event_ids FROM moved m JOIN archived a USING (event_id);
    out_audit_id := {{.schema}}.outboxtop_audit_write(p_actor, 'skip', p_filter, out_event_ids, out_rows, p_reason);
END;
$$;
