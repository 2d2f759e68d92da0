-- Skipped events (archived unpublished) are kept: only an operator lets them go.
-- Deletes the attempt history of the rows it deletes.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_delete_archived(p_age interval, p_batch integer)
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    ids uuid[];
BEGIN
    IF p_age IS NULL OR p_age < interval '0' OR p_batch IS NULL OR p_batch < 1 THEN
        RAISE EXCEPTION 'retention: the age must not be negative and the batch must be positive (got %, %)', p_age, p_batch
            USING ERRCODE = '22023';
    END IF;
    WITH gone AS (
        DELETE FROM {{.schema}}.outbox_event_archive WHERE event_id IN (
            SELECT event_id FROM {{.schema}}.outbox_event_archive
            WHERE archived_at <= pg_catalog.now() - p_age AND published_at IS NOT NULL
            ORDER BY archived_at LIMIT p_batch FOR UPDATE SKIP LOCKED)
        RETURNING event_id
    )
    SELECT pg_catalog.array_agg(event_id) INTO ids FROM gone;
    -- An event's attempt history goes with its archived row: looked up by the
    -- ids, along the primary key, however large the history is.
    IF ids IS NOT NULL THEN
        DELETE FROM {{.schema}}.outbox_attempt h WHERE h.event_id = ANY (ids);
    END IF;
    RETURN coalesce(pg_catalog.cardinality(ids), 0);
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_delete_archived(interval, integer) FROM PUBLIC;
