-- Skipped events (archived unpublished) are kept: only an operator lets them go.
-- Deletes the attempt history of the rows it deletes.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_delete_archived(p_age interval, p_batch integer)
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
DECLARE
    n integer;
BEGIN
    IF p_age IS NULL OR p_age < interval '0' OR p_batch IS NULL OR p_batch < 1 THEN
        RAISE EXCEPTION 'retention: the age must not be negative and the batch must be positive (got %, %)', p_age, p_batch
            USING ERRCODE = '22023';
    END IF;
    -- An event's attempt history goes with its archived row.
    WITH gone AS (
        DELETE FROM {{.schema}}.outbox_event_archive WHERE event_id IN (
            SELECT event_id FROM {{.schema}}.outbox_event_archive
            WHERE archived_at <= pg_catalog.now() - p_age AND published_at IS NOT NULL
            ORDER BY archived_at LIMIT p_batch FOR UPDATE SKIP LOCKED)
        RETURNING event_id
    ), history AS (
        DELETE FROM {{.schema}}.outbox_attempt h WHERE h.event_id IN (SELECT event_id FROM gone)
    )
    SELECT pg_catalog.count(*) INTO n FROM gone;
    RETURN n;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_delete_archived(interval, integer) FROM PUBLIC;
