-- An inbox's pruning (package inbox, Prune): deletes up to p_batch of
-- p_consumer's rows consumed before p_before and returns how many. Consumer
-- roles get EXECUTE on this and no DELETE on consumed_event: with table-level
-- DELETE (or UPDATE, or TRUNCATE) PostgreSQL lets a role LOCK the table in
-- every mode, and one consumer's ACCESS EXCLUSIVE lock would stop every other
-- consumer's inserts for as long as it held it. SELECT and INSERT allow only
-- ACCESS SHARE and ROW EXCLUSIVE, neither of which blocks an insert.
--
-- The function runs as the table's owner, so it checks what the row-level
-- security policy would: a role prunes the inbox named after a role it is (or
-- may become: a member of), as the policy lets it see only rows named after
-- its current role; the table's owner (and its members) prune any inbox, as
-- they may delete any row. The same on an inbox the application had, which
-- migrate adopted without the policy: a role that may read every row still
-- deletes only its own.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_inbox_prune(p_consumer text, p_before timestamptz, p_batch integer)
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    n integer;
    v_owner oid := (SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = '{{.schema}}.consumed_event'::regclass);
    v_consumer oid := (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = p_consumer);
BEGIN
    IF p_batch IS NULL OR p_batch < 1 OR NOT coalesce(pg_catalog.isfinite(p_before), false) THEN
        RAISE EXCEPTION 'inbox prune: a finite cutoff and a positive batch are required' USING ERRCODE = '22023';
    END IF;
    IF NOT (pg_catalog.pg_has_role(session_user, v_owner, 'MEMBER')
            OR (v_consumer IS NOT NULL AND pg_catalog.pg_has_role(session_user, v_consumer, 'MEMBER'))) THEN
        RAISE EXCEPTION 'permission denied to prune the inbox of %', p_consumer
            USING ERRCODE = '42501', HINT = 'a role prunes only the inbox named after it';
    END IF;
    DELETE FROM {{.schema}}.consumed_event WHERE consumer_name = p_consumer AND event_id IN (
        SELECT c.event_id FROM {{.schema}}.consumed_event c
        WHERE c.consumer_name = p_consumer AND c.consumed_at < p_before
        ORDER BY c.consumed_at LIMIT p_batch);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END;
$$;

-- The first time the function exists: roles set up with `outboxtop grants
-- --role consumer` before it (table-level DELETE on consumed_event) get what the
-- current grants print: EXECUTE on this function instead of DELETE. Later runs
-- leave the grants as they are.
DO $consumers$
DECLARE
    r regrole;
BEGIN
    IF (SELECT proacl FROM pg_catalog.pg_proc
        WHERE oid = '{{.schema}}.outboxtop_inbox_prune(text, timestamptz, integer)'::regprocedure) IS NOT NULL THEN
        RETURN;
    END IF;
    REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_inbox_prune(text, timestamptz, integer) FROM PUBLIC;
    FOR r IN
        SELECT DISTINCT (a.acl).grantee::regrole
        FROM (SELECT pg_catalog.aclexplode(c.relacl) AS acl, c.relowner FROM pg_catalog.pg_class c
              WHERE c.oid = '{{.schema}}.consumed_event'::regclass AND c.relacl IS NOT NULL) a
        WHERE (a.acl).privilege_type = 'DELETE' AND (a.acl).grantee <> 0::oid AND (a.acl).grantee <> a.relowner
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION {{.schema}}.outboxtop_inbox_prune(text, timestamptz, integer) TO %s', r);
        EXECUTE pg_catalog.format('REVOKE DELETE ON {{.schema}}.consumed_event FROM %s', r);
    END LOOP;
END
$consumers$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_inbox_prune(text, timestamptz, integer) FROM PUBLIC;
