-- Inboxes are pruned through functions/outboxtop_inbox_prune.sql, and consumer
-- roles lose table-level DELETE on consumed_event (that file, when it first
-- creates the function, gives each role that had DELETE EXECUTE on it instead):
-- with DELETE a consumer could LOCK the table in ACCESS EXCLUSIVE mode and stop
-- every other consumer's inserts. The tables do not change; the version moves so
-- that an older outboxtop, which would print DELETE again, refuses the schema.
SELECT 1;
