-- How many events have been inserted: the last value drawn from the identity of
-- seq (every insert draws one, whatever the commit-order mode; a rolled-back
-- insert draws one too). The relays poll it a few hundred times a second to learn
-- of new events: it reads the sequence, never the table, and asks nothing of the
-- producers, where a NOTIFY from their transactions made every commit queue on
-- one database-wide lock. Owner's rights, so that a relay needs EXECUTE on this
-- and no grant on a sequence whose name depends on how the table was made.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_inserted() RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT COALESCE(pg_catalog.pg_sequence_last_value(
        pg_catalog.pg_get_serial_sequence('{{.schema}}.outbox_event', 'seq')::pg_catalog.regclass), 0)
$$;

-- The first time the function exists: roles that may update lease_token (the
-- relays, as the printed grants say) may call it. Later runs leave its grants
-- as they are.
DO $relays$
DECLARE
    r regrole;
BEGIN
    IF (SELECT proacl FROM pg_catalog.pg_proc
        WHERE oid = '{{.schema}}.outboxtop_inserted()'::regprocedure) IS NOT NULL THEN
        RETURN;
    END IF;
    REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_inserted() FROM PUBLIC;
    FOR r IN
        SELECT DISTINCT (a.acl).grantee::regrole
        FROM (SELECT pg_catalog.aclexplode(attacl) AS acl FROM pg_catalog.pg_attribute
              WHERE attrelid = '{{.schema}}.outbox_event'::regclass AND attname = 'lease_token'
                AND attacl IS NOT NULL) a
        WHERE (a.acl).privilege_type = 'UPDATE' AND (a.acl).grantee <> 0::oid
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION {{.schema}}.outboxtop_inserted() TO %s', r);
    END LOOP;
END
$relays$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_inserted() FROM PUBLIC;
