-- The rows of consumer $1, for a capped count.
SELECT 1 FROM {{.schema}}.consumed_event WHERE consumer_name = $1
