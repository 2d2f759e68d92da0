-- A paced run's window in .table (outbox_event or outbox_event_archive): how
-- many rows the target .where selects, the highest seq among them (the run
-- covers no row past it: a replay's new seq lands after it) and the
-- database's clock, in whole seconds, when the run starts.
SELECT count(*), coalesce(max(seq), 0), floor(extract(epoch from now()))::bigint
FROM {{.schema}}.{{.table}} e WHERE {{.where}}
