-- The commit-order mode of outbox_event ($1, its qualified name): the
-- argument of its commit-order trigger (enforce or detect); no row: off.
SELECT pg_catalog.split_part(pg_catalog.encode(t.tgargs, 'escape'), '\000', 1)
FROM pg_catalog.pg_trigger t
WHERE t.tgrelid = pg_catalog.to_regclass($1) AND t.tgname = 'outbox_event_commit_order'
