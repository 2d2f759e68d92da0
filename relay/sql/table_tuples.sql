-- The dead and live tuples of table $1 (the schema's outbox table, quoted and
-- qualified), from the statistics: the health collector's gauges. No row
-- when the table is missing.
SELECT coalesce(n_dead_tup, 0), coalesce(n_live_tup, 0) FROM pg_stat_user_tables
WHERE relid = to_regclass($1)
