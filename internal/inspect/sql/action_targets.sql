-- The ids of the rows of .table an action's target .where selects, in seq
-- order: handed to the action's function, which checks each again.
SELECT event_id FROM {{.schema}}.{{.table}} e WHERE {{.where}} ORDER BY seq
