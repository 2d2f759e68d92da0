-- Whether function $1 (the schema's outboxtop_inbox_prune, with its argument
-- types) exists: a schema migrated before it did has none, and its consumer
-- roles still have DELETE. Asked, not tried: a failed call would abort the
-- caller's transaction.
SELECT to_regprocedure($1) IS NOT NULL
