-- How many rows of .table (outbox_event or outbox_event_archive) an action's
-- target .where selects, and the first .sample of their ids in seq order.
SELECT count(*), coalesce((array_agg(event_id::text ORDER BY seq))[1:{{.sample}}], '{}')
FROM {{.schema}}.{{.table}} e WHERE {{.where}}
