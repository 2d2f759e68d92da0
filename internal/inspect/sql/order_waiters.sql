-- Inserts waiting for an order lock of this outbox ($1: the table's first
-- advisory key, as pg_locks shows it, an oid), and the sessions that hold the
-- locks they wait for, oldest transaction first, at most $2: their pid, role,
-- application, state and how long their transaction has been open. Every
-- role may read pg_locks and these columns of pg_stat_activity.
WITH waits AS (
	SELECT l.pid, l.objid FROM pg_catalog.pg_locks l
	WHERE l.locktype = 'advisory' AND l.classid = $1::oid AND l.objsubid = 2 AND NOT l.granted
	  AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())
), holders AS (
	SELECT DISTINCT h.pid FROM pg_catalog.pg_locks h
	WHERE h.locktype = 'advisory' AND h.classid = $1::oid AND h.objsubid = 2 AND h.granted
	  AND h.objid IN (SELECT objid FROM waits) AND h.pid NOT IN (SELECT pid FROM waits)
	  AND h.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())
)
SELECT (SELECT count(*) FROM waits), a.pid, coalesce(a.usename::text, ''), coalesce(a.application_name, ''),
	coalesce(a.state, ''), coalesce(extract(epoch FROM now() - a.xact_start), 0)::float8
FROM (SELECT 1) one
LEFT JOIN holders h ON true
LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = h.pid
ORDER BY a.xact_start NULLS LAST
LIMIT $2
