-- Operator actions through the database's own door. Each action is a function that
-- runs as the schema's owner (SECURITY DEFINER: the role that migrates), re-checks
-- the state of every event it is given, changes only those rows and writes exactly
-- one outbox_audit row in the same transaction. Operators get EXECUTE on these
-- functions and no write privilege on outbox_event, the archive or the audit trail,
-- so no action can happen unaudited and no row can be forged through them: every
-- value they write is computed here, only the actor, reason and the event ids come
-- from the caller. Audit ids and times come only from the column defaults.
--
-- search_path is pinned (pg_temp last, so no temporary object can shadow a table or
-- function) and every object is schema-qualified anyway. EXECUTE is revoked from
-- PUBLIC; `outboxtop grants` prints who may call what.

-- The relay's hint (issue 12, migration 007): an event known to wait behind an
-- earlier unpublished event of its aggregate. Added here too so skip can clear it
-- whichever of the two migrations a database has; IF NOT EXISTS makes the second a
-- no-op.
ALTER TABLE {{.schema}}.outbox_event
    ADD COLUMN IF NOT EXISTS blocked boolean NOT NULL DEFAULT false;

-- The database login that performed an action, from the session: unlike the actor
-- (the person, as the application names them) a caller cannot choose it.
ALTER TABLE {{.schema}}.outbox_audit ADD COLUMN IF NOT EXISTS db_user text;
ALTER TABLE {{.schema}}.outbox_audit ALTER COLUMN db_user SET DEFAULT session_user;

-- An inbox row belongs to the consumer that wrote it. A role sees and changes only
-- the rows whose consumer_name is its own name (current_user), so one consumer
-- cannot read or delete another's; roles that may read the audit trail (console,
-- operator) read every inbox row for the Consumers panel. The table's owner (the
-- migrating role, which the examples and the demo use) is not subject to it.
ALTER TABLE {{.schema}}.consumed_event ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS outboxtop_inbox_own ON {{.schema}}.consumed_event;
CREATE POLICY outboxtop_inbox_own ON {{.schema}}.consumed_event
    USING (consumer_name = current_user)
    WITH CHECK (consumer_name = current_user);
DROP POLICY IF EXISTS outboxtop_inbox_read ON {{.schema}}.consumed_event;
CREATE POLICY outboxtop_inbox_read ON {{.schema}}.consumed_event FOR SELECT
    -- A sub-select: evaluated once per query (an InitPlan), not once per row.
    USING ((SELECT has_table_privilege(current_user, '{{.schema}}.outbox_audit', 'SELECT')));

-- The state of a row, exactly as package wire defines it. No SET clause, so
-- PostgreSQL inlines it into the actions' statements (a SET would make it a call
-- per row); it names nothing but built-ins, which pg_catalog resolves first.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_state(
    published_at timestamptz, failed_at timestamptz, lease_until timestamptz, available_at timestamptz)
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN published_at IS NOT NULL THEN 'published'
        WHEN failed_at IS NOT NULL THEN 'failed'
        WHEN lease_until > now() THEN 'leased'
        WHEN available_at > now() THEN 'scheduled'
        ELSE 'ready' END
$$;

-- The states an action may touch: the caller's (pending meaning ready + scheduled),
-- which must be among the action's own; all of the action's when none are given.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_action_states(p_action text, p_states text[])
RETURNS text[] LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    allowed text[] := CASE p_action
        WHEN 'retry' THEN ARRAY['failed', 'scheduled']
        WHEN 'skip' THEN ARRAY['failed', 'scheduled']
        WHEN 'reset-lease' THEN ARRAY['leased']
        WHEN 'park' THEN ARRAY['ready', 'scheduled', 'leased']
        WHEN 'archive' THEN ARRAY['published']
        WHEN 'replay' THEN ARRAY['published', 'archived']
    END;
    wanted text[] := coalesce(p_states, '{}');
BEGIN
    IF allowed IS NULL THEN
        RAISE EXCEPTION 'unknown action %', p_action USING ERRCODE = '22023';
    END IF;
    IF 'pending' = ANY (wanted) THEN
        wanted := array_remove(wanted, 'pending') || ARRAY['ready', 'scheduled'];
    END IF;
    IF cardinality(wanted) = 0 THEN
        RETURN allowed;
    END IF;
    IF NOT wanted <@ allowed THEN
        RAISE EXCEPTION '% applies to % events, not %', p_action, allowed, wanted USING ERRCODE = '22023';
    END IF;
    RETURN wanted;
END;
$$;

-- The one way an audit row is written: the id, the time and the database user come
-- from the column defaults.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_audit_write(
    p_actor text, p_action text, p_filter jsonb, p_event_ids uuid[], p_rows integer, p_reason text)
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    id bigint;
BEGIN
    IF coalesce(btrim(p_actor), '') = '' THEN
        RAISE EXCEPTION 'an action needs an actor' USING ERRCODE = '22023';
    END IF;
    INSERT INTO {{.schema}}.outbox_audit (actor, action, filter, event_ids, rows, reason)
    VALUES (p_actor, p_action, coalesce(p_filter, '{}'), p_event_ids, p_rows, nullif(p_reason, ''))
    RETURNING audit_id INTO id;
    RETURN id;
END;
$$;

-- retry: failed or scheduled events become ready now; a failed one starts its
-- attempts over.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_retry(
    p_actor text, p_reason text, p_ids uuid[], p_states text[], p_filter jsonb,
    OUT out_audit_id bigint, OUT out_rows integer, OUT out_event_ids uuid[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    st text[] := {{.schema}}.outboxtop_action_states('retry', p_states);
BEGIN
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

-- reset-lease: a leased event's lease ends now. The token is kept: its holder can
-- still mark what it published, which saves a duplicate; the next claim replaces it.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_reset_lease(
    p_actor text, p_reason text, p_ids uuid[], p_states text[], p_filter jsonb,
    OUT out_audit_id bigint, OUT out_rows integer, OUT out_event_ids uuid[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    st text[] := {{.schema}}.outboxtop_action_states('reset-lease', p_states);
BEGIN
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

-- park: a pending or leased event is failed by hand, with the reason as its error.
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

-- skip: failed or scheduled events that head their aggregate move to the archive,
-- failed, with the reason; the aggregate's next events are no longer blocked.
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
            headers, last_error, failed_at, kafka_topic, kafka_partition, kafka_offset, replay_of)
        SELECT event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
            attempts, lease_token, lease_until, published_at, seq, topic, headers,
            'skipped by ' || p_actor || ': ' || p_reason || coalesce(' (last error: ' || last_error || ')', ''),
            coalesce(failed_at, now()), kafka_topic, kafka_partition, kafka_offset, replay_of
        FROM moved
        ON CONFLICT (event_id) DO UPDATE SET
            aggregate_type = excluded.aggregate_type, aggregate_id = excluded.aggregate_id,
            event_type = excluded.event_type, payload = excluded.payload, created_at = excluded.created_at,
            available_at = excluded.available_at, attempts = excluded.attempts,
            lease_token = excluded.lease_token, lease_until = excluded.lease_until,
            published_at = excluded.published_at, seq = excluded.seq, topic = excluded.topic,
            headers = excluded.headers, last_error = excluded.last_error, failed_at = excluded.failed_at,
            kafka_topic = excluded.kafka_topic, kafka_partition = excluded.kafka_partition,
            kafka_offset = excluded.kafka_offset, replay_of = excluded.replay_of, archived_at = now()
        RETURNING event_id
    ), unblocked AS (
        -- The rows that waited behind a skipped event may be claimed again.
        UPDATE {{.schema}}.outbox_event e SET blocked = false
        WHERE e.blocked AND e.published_at IS NULL
          AND (e.aggregate_type, e.aggregate_id) IN (SELECT aggregate_type, aggregate_id FROM moved)
          AND e.event_id NOT IN (SELECT event_id FROM moved)
        RETURNING 1
    )
    SELECT count(*), coalesce((array_agg(m.event_id ORDER BY m.seq))[1:1000], '{}')
    INTO out_rows, out_event_ids FROM moved m JOIN archived a USING (event_id);
    out_audit_id := {{.schema}}.outboxtop_audit_write(p_actor, 'skip', p_filter, out_event_ids, out_rows, p_reason);
END;
$$;

-- archive: published events move to the archive unchanged. The CLI archives in
-- batches, one transaction each: the first call (p_audit_id NULL) writes the audit
-- row, later calls of the same action add their rows to it, so the audit row always
-- counts exactly what has been moved.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_archive(
    p_actor text, p_reason text, p_ids uuid[], p_filter jsonb, p_audit_id bigint,
    OUT out_audit_id bigint, OUT out_rows integer, OUT out_event_ids uuid[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    updated integer;
BEGIN
    WITH moved AS (
        DELETE FROM {{.schema}}.outbox_event e
        WHERE e.event_id = ANY (p_ids) AND e.published_at IS NOT NULL
        RETURNING e.*
    ), archived AS (
        INSERT INTO {{.schema}}.outbox_event_archive (event_id, aggregate_type, aggregate_id, event_type,
            payload, created_at, available_at, attempts, lease_token, lease_until, published_at, seq, topic,
            headers, last_error, failed_at, kafka_topic, kafka_partition, kafka_offset, replay_of)
        SELECT event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
            attempts, lease_token, lease_until, published_at, seq, topic, headers, last_error, failed_at,
            kafka_topic, kafka_partition, kafka_offset, replay_of
        FROM moved
        ON CONFLICT (event_id) DO UPDATE SET
            aggregate_type = excluded.aggregate_type, aggregate_id = excluded.aggregate_id,
            event_type = excluded.event_type, payload = excluded.payload, created_at = excluded.created_at,
            available_at = excluded.available_at, attempts = excluded.attempts,
            lease_token = excluded.lease_token, lease_until = excluded.lease_until,
            published_at = excluded.published_at, seq = excluded.seq, topic = excluded.topic,
            headers = excluded.headers, last_error = excluded.last_error, failed_at = excluded.failed_at,
            kafka_topic = excluded.kafka_topic, kafka_partition = excluded.kafka_partition,
            kafka_offset = excluded.kafka_offset, replay_of = excluded.replay_of, archived_at = now()
        RETURNING event_id, seq
    )
    SELECT count(*), coalesce((array_agg(event_id ORDER BY seq))[1:1000], '{}')
    INTO out_rows, out_event_ids FROM archived;
    IF p_audit_id IS NULL THEN
        out_audit_id := {{.schema}}.outboxtop_audit_write(p_actor, 'archive', p_filter, out_event_ids, out_rows, p_reason);
        RETURN;
    END IF;
    UPDATE {{.schema}}.outbox_audit a
    SET rows = a.rows + out_rows, event_ids = (coalesce(a.event_ids, '{}') || out_event_ids)[1:1000]
    WHERE a.audit_id = p_audit_id AND a.action = 'archive' AND a.actor = p_actor AND a.db_user = session_user;
    GET DIAGNOSTICS updated = ROW_COUNT;
    IF updated <> 1 THEN
        RAISE EXCEPTION 'archive: audit row % is not this archive''s', p_audit_id USING ERRCODE = '22023';
    END IF;
    out_audit_id := p_audit_id;
END;
$$;

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
    IF 'published' = ANY (st) THEN
        IF p_new_id THEN
            WITH ins AS (
                INSERT INTO {{.schema}}.outbox_event (event_id, aggregate_type, aggregate_id, event_type,
                    payload, topic, headers, replay_of)
                SELECT gen_random_uuid(), aggregate_type, aggregate_id, event_type, payload, topic, headers, event_id
                FROM {{.schema}}.outbox_event
                WHERE event_id = ANY (p_ids) AND published_at IS NOT NULL ORDER BY seq
                RETURNING event_id, seq
            ) SELECT coalesce(array_agg(event_id ORDER BY seq), '{}') INTO more FROM ins;
        ELSE
            WITH moved AS (
                DELETE FROM {{.schema}}.outbox_event
                WHERE event_id = ANY (p_ids) AND published_at IS NOT NULL
                RETURNING *
            ), ins AS (
                INSERT INTO {{.schema}}.outbox_event (event_id, aggregate_type, aggregate_id, event_type,
                    payload, created_at, available_at, attempts, topic, headers, replay_of)
                SELECT event_id, aggregate_type, aggregate_id, event_type, payload, created_at, now(),
                    0, topic, headers, event_id
                FROM moved ORDER BY seq
                RETURNING event_id, seq
            ) SELECT coalesce(array_agg(event_id ORDER BY seq), '{}') INTO more FROM ins;
        END IF;
        ids := ids || more;
    END IF;
    IF 'archived' = ANY (st) THEN
        IF p_new_id THEN
            WITH ins AS (
                INSERT INTO {{.schema}}.outbox_event (event_id, aggregate_type, aggregate_id, event_type,
                    payload, topic, headers, replay_of)
                SELECT gen_random_uuid(), aggregate_type, aggregate_id, event_type, payload, topic, headers, event_id
                FROM {{.schema}}.outbox_event_archive
                WHERE event_id = ANY (p_ids) ORDER BY seq
                RETURNING event_id, seq
            ) SELECT coalesce(array_agg(event_id ORDER BY seq), '{}') INTO more FROM ins;
        ELSE
            WITH moved AS (
                DELETE FROM {{.schema}}.outbox_event_archive a
                WHERE a.event_id = ANY (p_ids)
                  AND NOT EXISTS (SELECT 1 FROM {{.schema}}.outbox_event o WHERE o.event_id = a.event_id)
                RETURNING a.*
            ), ins AS (
                INSERT INTO {{.schema}}.outbox_event (event_id, aggregate_type, aggregate_id, event_type,
                    payload, created_at, available_at, attempts, topic, headers, replay_of)
                SELECT event_id, aggregate_type, aggregate_id, event_type, payload, created_at, now(),
                    0, topic, headers, event_id
                FROM moved ORDER BY seq
                RETURNING event_id, seq
            ) SELECT coalesce(array_agg(event_id ORDER BY seq), '{}') INTO more FROM ins;
        END IF;
        ids := ids || more;
    END IF;
    out_rows := cardinality(ids);
    out_event_ids := ids[1:1000];
    out_audit_id := {{.schema}}.outboxtop_audit_write(p_actor, 'replay', p_filter, out_event_ids, out_rows, p_reason);
END;
$$;

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

-- The relay's housekeeping (--archive-after, --archive-retention): no audit row, as
-- it is configuration rather than a decision; one batch per call.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_archive_published(p_age interval, p_batch integer)
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    n integer;
BEGIN
    WITH moved AS (
        DELETE FROM {{.schema}}.outbox_event WHERE event_id IN (
            SELECT event_id FROM {{.schema}}.outbox_event
            WHERE published_at IS NOT NULL AND published_at <= now() - p_age
            ORDER BY published_at LIMIT p_batch FOR UPDATE SKIP LOCKED)
        AND published_at IS NOT NULL
        RETURNING *
    ), archived AS (
        INSERT INTO {{.schema}}.outbox_event_archive (event_id, aggregate_type, aggregate_id, event_type,
            payload, created_at, available_at, attempts, lease_token, lease_until, published_at, seq, topic,
            headers, last_error, failed_at, kafka_topic, kafka_partition, kafka_offset, replay_of)
        SELECT event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
            attempts, lease_token, lease_until, published_at, seq, topic, headers, last_error, failed_at,
            kafka_topic, kafka_partition, kafka_offset, replay_of
        FROM moved
        ON CONFLICT (event_id) DO UPDATE SET
            aggregate_type = excluded.aggregate_type, aggregate_id = excluded.aggregate_id,
            event_type = excluded.event_type, payload = excluded.payload, created_at = excluded.created_at,
            available_at = excluded.available_at, attempts = excluded.attempts,
            lease_token = excluded.lease_token, lease_until = excluded.lease_until,
            published_at = excluded.published_at, seq = excluded.seq, topic = excluded.topic,
            headers = excluded.headers, last_error = excluded.last_error, failed_at = excluded.failed_at,
            kafka_topic = excluded.kafka_topic, kafka_partition = excluded.kafka_partition,
            kafka_offset = excluded.kafka_offset, replay_of = excluded.replay_of, archived_at = now()
        RETURNING 1
    )
    SELECT count(*) INTO n FROM archived;
    RETURN n;
END;
$$;

-- Skipped events (archived unpublished) are kept: only an operator lets them go.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_delete_archived(p_age interval, p_batch integer)
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    n integer;
BEGIN
    DELETE FROM {{.schema}}.outbox_event_archive WHERE event_id IN (
        SELECT event_id FROM {{.schema}}.outbox_event_archive
        WHERE archived_at <= now() - p_age AND published_at IS NOT NULL
        ORDER BY archived_at LIMIT p_batch FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END;
$$;

REVOKE ALL ON FUNCTION
    {{.schema}}.outboxtop_state(timestamptz, timestamptz, timestamptz, timestamptz),
    {{.schema}}.outboxtop_action_states(text, text[]),
    {{.schema}}.outboxtop_audit_write(text, text, jsonb, uuid[], integer, text),
    {{.schema}}.outboxtop_retry(text, text, uuid[], text[], jsonb),
    {{.schema}}.outboxtop_reset_lease(text, text, uuid[], text[], jsonb),
    {{.schema}}.outboxtop_park(text, text, uuid[], text[], jsonb),
    {{.schema}}.outboxtop_skip(text, text, uuid[], text[], jsonb),
    {{.schema}}.outboxtop_archive(text, text, uuid[], jsonb, bigint),
    {{.schema}}.outboxtop_replay(text, text, uuid[], text[], jsonb, boolean),
    {{.schema}}.outboxtop_audit_relay(text, text),
    {{.schema}}.outboxtop_archive_published(interval, integer),
    {{.schema}}.outboxtop_delete_archived(interval, integer)
FROM PUBLIC;
