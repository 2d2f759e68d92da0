-- What changed from one JSON value to another, path by path: an array of
-- {"path": [keys…], "old": …, "new": …}, "old" absent where the path was
-- added and "new" where it was removed. Objects are compared key by key, in
-- key order; any other value (an array, a string) is one change when it
-- differs. At most 200 changes. The audit row of a correction holds its
-- payload's diff; the CLI and the console show the same diff before an
-- operator confirms. It reads no table, so every role may call it.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_jsonb_diff(p_old jsonb, p_new jsonb, p_path text[] DEFAULT '{}')
RETURNS jsonb LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    out jsonb := '[]';
    k text;
    change jsonb;
BEGIN
    IF p_old IS NOT DISTINCT FROM p_new THEN
        RETURN out;
    END IF;
    IF pg_catalog.jsonb_typeof(p_old) = 'object' AND pg_catalog.jsonb_typeof(p_new) = 'object' THEN
        FOR k IN SELECT o.key FROM pg_catalog.jsonb_object_keys(p_old) AS o(key)
                 UNION SELECT n.key FROM pg_catalog.jsonb_object_keys(p_new) AS n(key) ORDER BY 1 LOOP
            out := out || {{.schema}}.outboxtop_jsonb_diff(p_old -> k, p_new -> k, pg_catalog.array_append(p_path, k));
            IF pg_catalog.jsonb_array_length(out) >= 200 THEN
                RETURN out;
            END IF;
        END LOOP;
        RETURN out;
    END IF;
    change := pg_catalog.jsonb_build_object('path', pg_catalog.to_jsonb(p_path));
    IF p_old IS NOT NULL THEN
        change := change || pg_catalog.jsonb_build_object('old', p_old);
    END IF;
    IF p_new IS NOT NULL THEN
        change := change || pg_catalog.jsonb_build_object('new', p_new);
    END IF;
    RETURN pg_catalog.jsonb_build_array(change);
END;
$$;
