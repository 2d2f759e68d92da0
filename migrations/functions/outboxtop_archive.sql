-- archive: published events move to the archive unchanged. The CLI archives in
-- batches, one transaction each, on one connection: the first call (p_audit_id
-- NULL) writes the audit row, later calls of the same action add their rows to
-- it, so the audit row always counts exactly what has been moved. Only the
-- database session that wrote the row may add to it (db_session: its backend's
-- pid and start time, which no other session has, now or later): another call,
-- even naming the same actor under the same login, writes a row of its own or
-- is refused.
--
-- An event whose id the archive holds already (the producer chose an archived
-- event's id for a new one) is refused: it stays in the outbox, published, the
-- archived row is left as it is, and the call counts it in out_refused (and the
-- audit row's refused) and names it in out_refused_ids, so a caller going
-- through the outbox in batches passes it over next time.

-- The result gained out_refused and out_refused_ids: CREATE OR REPLACE cannot
-- change it, so an older definition is renamed out of the way, keeping its ACL,
-- which the block after the CREATE copies onto the new function before
-- dropping it. Roles granted the old one keep their EXECUTE.
DO $old$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_proc
               WHERE oid = pg_catalog.to_regprocedure('{{.schema}}.outboxtop_archive(text, text, uuid[], jsonb, bigint)')
                 AND NOT 'out_refused' = ANY (coalesce(proargnames, '{}'))) THEN
        DROP FUNCTION IF EXISTS {{.schema}}.superseded_outboxtop_archive(text, text, uuid[], jsonb, bigint);
        ALTER FUNCTION {{.schema}}.outboxtop_archive(text, text, uuid[], jsonb, bigint)
            RENAME TO superseded_outboxtop_archive;
    END IF;
END
$old$;

CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_archive(
    p_actor text, p_reason text, p_ids uuid[], p_filter jsonb, p_audit_id bigint,
    OUT out_audit_id bigint, OUT out_rows integer, OUT out_event_ids uuid[],
    OUT out_refused integer, OUT out_refused_ids uuid[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    updated integer;
    moved_n integer;
    me text := pg_catalog.pg_backend_pid()::text || '@' || coalesce((SELECT pg_catalog.date_part('epoch', a.backend_start)::text
        FROM pg_catalog.pg_stat_activity a WHERE a.pid = pg_catalog.pg_backend_pid()), '?');
BEGIN
    PERFORM {{.schema}}.outboxtop_hold_bound('archive', p_actor, pg_catalog.cardinality(p_ids));
    -- Refused first, and never deleted: the DELETE below skips them.
    SELECT pg_catalog.count(*), coalesce(pg_catalog.array_agg(e.event_id ORDER BY e.seq), '{}')
    INTO out_refused, out_refused_ids
    FROM {{.schema}}.outbox_event e
    WHERE e.event_id = ANY (p_ids) AND e.published_at IS NOT NULL
      AND EXISTS (SELECT 1 FROM {{.schema}}.outbox_event_archive a WHERE a.event_id = e.event_id);
    WITH moved AS (
        DELETE FROM {{.schema}}.outbox_event e
        WHERE e.event_id = ANY (p_ids) AND e.published_at IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM {{.schema}}.outbox_event_archive a WHERE a.event_id = e.event_id)
        RETURNING e.*
    ), archived AS (
        INSERT INTO {{.schema}}.outbox_event_archive (event_id, aggregate_type, aggregate_id, event_type,
            payload, created_at, available_at, attempts, lease_token, lease_until, published_at, seq, topic,
            headers, last_error, failed_at, kafka_topic, kafka_partition, kafka_offset, replay_of, lease_holder)
        SELECT event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
            attempts, lease_token, lease_until, published_at, seq, topic, headers, last_error, failed_at,
            kafka_topic, kafka_partition, kafka_offset, replay_of, lease_holder
        FROM moved
        ON CONFLICT (event_id) DO NOTHING
        RETURNING event_id, seq
    )
    SELECT pg_catalog.count(*), coalesce((pg_catalog.array_agg(event_id ORDER BY seq))[1:1000], '{}'),
        (SELECT pg_catalog.count(*) FROM moved)
    INTO out_rows, out_event_ids, moved_n FROM archived;
    -- An archive row that appeared since the check (a concurrent skip of the
    -- same id): the deleted live row would be lost, so nothing happens.
    IF moved_n <> out_rows THEN
        RAISE EXCEPTION 'archive: % events were archived by another session meanwhile; nothing was changed, try again',
            moved_n - out_rows USING ERRCODE = '40001';
    END IF;
    IF p_audit_id IS NULL THEN
        out_audit_id := {{.schema}}.outboxtop_audit_write(p_actor, 'archive', p_filter, out_event_ids, out_rows, p_reason);
        UPDATE {{.schema}}.outbox_audit a SET refused = out_refused, db_session = me WHERE a.audit_id = out_audit_id;
        RETURN;
    END IF;
    UPDATE {{.schema}}.outbox_audit a
    SET rows = a.rows + out_rows, refused = a.refused + out_refused,
        event_ids = (pg_catalog.array_cat(coalesce(a.event_ids, '{}'), out_event_ids))[1:1000]
    WHERE a.audit_id = p_audit_id AND a.action = 'archive' AND a.actor = p_actor AND a.db_user = session_user
      AND a.db_session = me;
    GET DIAGNOSTICS updated = ROW_COUNT;
    IF updated <> 1 THEN
        RAISE EXCEPTION 'archive: audit row % is not this archive''s (only the session that wrote it may add to it)', p_audit_id
            USING ERRCODE = '22023';
    END IF;
    out_audit_id := p_audit_id;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_archive(text, text, uuid[], jsonb, bigint) FROM PUBLIC;

DO $regrant$
DECLARE
    r regrole;
BEGIN
    IF pg_catalog.to_regprocedure('{{.schema}}.superseded_outboxtop_archive(text, text, uuid[], jsonb, bigint)') IS NULL THEN
        RETURN;
    END IF;
    FOR r IN
        SELECT DISTINCT a.grantee::regrole
        FROM pg_catalog.pg_proc p CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
        WHERE p.oid = '{{.schema}}.superseded_outboxtop_archive(text, text, uuid[], jsonb, bigint)'::regprocedure
          AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0::oid AND a.grantee <> p.proowner
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION {{.schema}}.outboxtop_archive(text, text, uuid[], jsonb, bigint) TO %s', r);
    END LOOP;
    DROP FUNCTION {{.schema}}.superseded_outboxtop_archive(text, text, uuid[], jsonb, bigint);
END
$regrant$;
