-- The audit row of an ended backend: actor $1, reason $2, the holder $3.
SELECT {{.schema}}.outboxtop_audit_terminate($1, $2, $3::jsonb)
