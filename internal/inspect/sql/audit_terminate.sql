-- End a backend and write its audit row, only once it has exited (the function
-- checks the target and who may end it): actor $1, reason $2, the holder $3.
-- NULL: signalled, but still running after 5 s.
SELECT {{.schema}}.outboxtop_audit_terminate($1, $2, $3::jsonb)
