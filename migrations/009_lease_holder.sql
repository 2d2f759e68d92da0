-- Which relay holds a lease, and the indexes the aggregate timeline and the audit
-- log's event filter lacked (issue 16).
--
-- Upgrading a large existing outbox: CREATE INDEX below blocks writes to its table
-- while it builds (minutes on tens of millions of rows; the relay's marks and the
-- application's inserts wait). To avoid that, build the three indexes beforehand,
-- outside a transaction, with exactly these names and definitions:
--
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_event_archive_aggregate_idx
--       ON <schema>.outbox_event_archive (aggregate_type, aggregate_id, seq);
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_audit_event_ids_idx
--       ON <schema>.outbox_audit USING gin (event_ids);
--
-- then run `outboxtop migrate`: IF NOT EXISTS makes these statements no-ops. A
-- CONCURRENTLY build that failed leaves an INVALID index under its name, which IF
-- NOT EXISTS would keep: drop it (DROP INDEX CONCURRENTLY) and build it again.
-- Adding the nullable column rewrites nothing.

-- lease_holder: the relay that made the latest claim of the row, as "host:pid"
-- (relay.Config.Holder), set with the lease token in the same UPDATE. It is not
-- cleared: only on a leased row does it name the current holder ("held by" in
-- trace, "holder" in the console); afterwards it is the last relay that claimed
-- the row ("last relay"), and on a published row the one that published it
-- ("published by": the mark is fenced by the token written with it). NULL on rows
-- no relay has claimed since this migration. No index names it, so the claim's
-- UPDATE stays HOT. Archived rows keep it: the archive functions are redefined
-- below with the column.
ALTER TABLE {{.schema}}.outbox_event ADD COLUMN IF NOT EXISTS lease_holder text;
ALTER TABLE {{.schema}}.outbox_event_archive ADD COLUMN IF NOT EXISTS lease_holder text;

-- A relay role set up with `outboxtop grants --role relay` before this migration
-- may update lease_token but not the new column, and its claims would fail with
-- permission denied the moment the upgraded relay starts: every role holding a
-- column grant to update lease_token gets one for lease_holder too (the grants
-- the current `outboxtop grants --role relay` prints).
DO $holder$
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
        EXECUTE format('GRANT UPDATE (lease_holder) ON {{.schema}}.outbox_event TO %s', r);
    END LOOP;
END
$holder$;

-- The aggregate timeline (`outboxtop events --aggregate`, the console's aggregate
-- view) reads an aggregate's history in seq order: outbox_aggregate_idx (001)
-- serves its unpublished rows, this index its archived ones.
--
-- Deliberately NOT created: an index of published rows by aggregate
-- (outbox_event (aggregate_type, aggregate_id, seq) WHERE published_at IS NOT
-- NULL). Every mark would add an entry to it — the relay's hot path, for a triage
-- read — and it cost the SQL ceiling 5–9% (BENCHMARKS.md, "Indexes the relay
-- pays for"). Without it the timeline's published part reads the published rows
-- the outbox still holds (bounded by --archive-after). An operator who wants that
-- part fast on a large published history can build it, and the timeline uses it:
--   CREATE INDEX CONCURRENTLY outbox_aggregate_published_idx
--       ON <schema>.outbox_event (aggregate_type, aggregate_id, seq) WHERE published_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_event_archive_aggregate_idx
    ON {{.schema}}.outbox_event_archive (aggregate_type, aggregate_id, seq);

-- The audit rows that touched an event (`outboxtop trace`, `outboxtop audit
-- --event`): event_ids @> ARRAY[id] reads this index instead of every audit row.
CREATE INDEX IF NOT EXISTS outbox_audit_event_ids_idx
    ON {{.schema}}.outbox_audit USING gin (event_ids);

-- The functions that move rows to the archive (008), now copying lease_holder.
-- CREATE OR REPLACE keeps their owner and their EXECUTE grants.

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
            headers, last_error, failed_at, kafka_topic, kafka_partition, kafka_offset, replay_of, lease_holder)
        SELECT event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
            attempts, lease_token, lease_until, published_at, seq, topic, headers, last_error, failed_at,
            kafka_topic, kafka_partition, kafka_offset, replay_of, lease_holder
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
            headers, last_error, failed_at, kafka_topic, kafka_partition, kafka_offset, replay_of, lease_holder)
        SELECT event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
            attempts, lease_token, lease_until, published_at, seq, topic, headers, last_error, failed_at,
            kafka_topic, kafka_partition, kafka_offset, replay_of, lease_holder
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
        RETURNING 1
    )
    SELECT count(*) INTO n FROM archived;
    RETURN n;
END;
$$;
