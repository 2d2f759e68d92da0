-- The one way an audit row is written: the id, the time and the database user come
-- from the column defaults.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_audit_write(
    p_actor text, p_action text, p_filter jsonb, p_event_ids uuid[], p_rows integer, p_reason text)
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    id bigint;
BEGIN
    -- An actor must name someone: nothing left once the code points that show
    -- nothing or only room are taken out is no actor. The class is
    -- internal/ident's Blank (white space, controls, format characters, variation
    -- selectors, the other default-ignorables, Hangul fillers, the braille blank),
    -- what makes its Key empty; a test holds the two together.
    IF coalesce(pg_catalog.regexp_replace(p_actor,
            '[\u0001-\u0020\u007f-\u00a0\u00ad\u034f\u061c\u115f-\u1160\u1680\u17b4-\u17b5\u180b-\u180f\u2000-\u200f\u2028-\u202f\u205f-\u206f\u2800\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]',
            '', 'g'), '') = '' THEN
        RAISE EXCEPTION 'an action needs an actor (one that is not only white space, control or invisible characters)'
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO {{.schema}}.outbox_audit (actor, action, filter, event_ids, rows, reason)
    VALUES (p_actor, p_action, coalesce(p_filter, '{}'), p_event_ids, p_rows, nullif(p_reason, ''))
    RETURNING audit_id INTO id;
    RETURN id;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_audit_write(text, text, jsonb, uuid[], integer, text) FROM PUBLIC;
