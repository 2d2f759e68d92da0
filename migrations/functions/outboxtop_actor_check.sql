-- The one check of an actor, made by every function that records one before
-- it changes anything: an actor must name someone, and nothing left once the
-- code points that show nothing or only room are taken out is no actor. The
-- class is internal/ident's Blank (white space, controls, format characters,
-- variation selectors, the other default-ignorables, Hangul fillers, the
-- braille blank), what makes its Key empty; a test holds the two together.
-- outboxtop_audit_write calls it, and outboxtop_audit_terminate before it
-- signals: a refusal after the signal would leave the backend ended and no
-- audit row naming who ended it.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_actor_check(p_actor text)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF coalesce(pg_catalog.regexp_replace(p_actor,
            '[\u0001-\u0020\u007f-\u00a0\u00ad\u034f\u061c\u115f-\u1160\u1680\u17b4-\u17b5\u180b-\u180f\u2000-\u200f\u2028-\u202f\u205f-\u206f\u2800\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]',
            '', 'g'), '') = '' THEN
        RAISE EXCEPTION 'an action needs an actor (one that is not only white space, control or invisible characters)'
            USING ERRCODE = '22023';
    END IF;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_actor_check(text) FROM PUBLIC;
