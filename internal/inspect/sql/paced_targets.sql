-- The events a paced run has still to cover in .table: the rows the target
-- .where selects (which bounds seq to the run's window, past its cursor), in
-- seq order, at most .limit (a parameter's mark; NULL: no bound).
SELECT event_id, seq FROM {{.schema}}.{{.table}} e WHERE {{.where}} ORDER BY seq LIMIT {{.limit}}
