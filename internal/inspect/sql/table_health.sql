-- The tables' sizes and vacuum statistics: schema $1, the tables $2 in that order.
SELECT c.relname, coalesce(st.n_live_tup, 0), coalesce(st.n_dead_tup, 0),
	st.last_vacuum, st.last_autovacuum, st.last_autoanalyze,
	pg_table_size(c.oid), pg_indexes_size(c.oid)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_user_tables st ON st.relid = c.oid
WHERE n.nspname = $1 AND c.relname = ANY($2) AND c.relkind IN ('r', 'p')
ORDER BY array_position($2, c.relname::text)
