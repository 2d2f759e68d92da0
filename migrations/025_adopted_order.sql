-- Its own step, apart from 024's ALTER TABLE: an UPDATE takes ROW EXCLUSIVE
-- on outbox_event, which lets the application's inserts go on while it works
-- through the backlog (in 024 it ran under the ALTER's ACCESS EXCLUSIVE lock,
-- and inserts waited seconds for it on 50,000 events).
--
-- The backlog present when a seed table was adopted (migration 001 numbered it
-- by created_at, the transactions' start, and left the count in seq's
-- comment): no one knows in which order those events committed, so every
-- unpublished event of it that follows another unpublished event of its
-- aggregate is marked unserialized, and the console and status say their
-- order is unknown instead of claiming it.
DO $adopted$
DECLARE
    through bigint := pg_catalog.substring(
        pg_catalog.col_description('{{.schema}}.outbox_event'::regclass,
            (SELECT attnum FROM pg_catalog.pg_attribute
             WHERE attrelid = '{{.schema}}.outbox_event'::regclass AND attname = 'seq')::integer),
        'adopted through seq ([0-9]+)')::bigint;
BEGIN
    IF through IS NULL THEN
        RETURN;
    END IF;
    UPDATE {{.schema}}.outbox_event AS e SET unserialized = true
    WHERE e.seq <= through AND e.published_at IS NULL AND e.unserialized IS NOT TRUE
      AND EXISTS (SELECT 1 FROM {{.schema}}.outbox_event AS p
                  WHERE p.aggregate_type = e.aggregate_type AND p.aggregate_id = e.aggregate_id
                    AND p.seq < e.seq AND p.published_at IS NULL);
END
$adopted$;

