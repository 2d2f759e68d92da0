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
        wanted := pg_catalog.array_cat(pg_catalog.array_remove(wanted, 'pending'), ARRAY['ready', 'scheduled']);
    END IF;
    IF pg_catalog.cardinality(wanted) = 0 THEN
        RETURN allowed;
    END IF;
    IF NOT wanted OPERATOR(pg_catalog.<@) allowed THEN
        RAISE EXCEPTION '% applies to % events, not %', p_action, allowed, wanted USING ERRCODE = '22023';
    END IF;
    RETURN wanted;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_action_states(text, text[]) FROM PUBLIC;
