-- The rows of .table matching .where, for a capped count.
SELECT 1 FROM {{.schema}}.{{.table}} WHERE {{.where}}
