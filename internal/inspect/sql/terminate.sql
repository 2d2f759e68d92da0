-- End backend $1, only while it is the session seen (its backend_start $2 and
-- xact_start $3, so a reused pid is never ended), waiting up to $4 ms for it
-- to go.
SELECT pg_catalog.pg_terminate_backend(a.pid, $4)
FROM pg_catalog.pg_stat_activity a
WHERE a.pid = $1 AND a.backend_start = $2 AND a.xact_start IS NOT DISTINCT FROM $3
