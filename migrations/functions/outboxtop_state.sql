-- The state of a row, exactly as package wire defines it. No SET clause, so
-- PostgreSQL inlines it into the actions' statements (a SET would make it a call
-- per row). Inlined, it runs on the caller's search_path (the actions' own), so
-- its built-ins are named with pg_catalog too.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_state(
    published_at timestamptz, failed_at timestamptz, lease_until timestamptz, available_at timestamptz)
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN published_at IS NOT NULL THEN 'published'
        WHEN failed_at IS NOT NULL THEN 'failed'
        WHEN lease_until > pg_catalog.now() THEN 'leased'
        WHEN available_at > pg_catalog.now() THEN 'scheduled'
        ELSE 'ready' END
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_state(timestamptz, timestamptz, timestamptz, timestamptz) FROM PUBLIC;
