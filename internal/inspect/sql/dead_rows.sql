-- The dead rows of table $1 (outbox_event) now, from the statistics.
SELECT coalesce((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = $1::regclass), 0)
