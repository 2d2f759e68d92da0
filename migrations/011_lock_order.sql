-- The operator actions lock their events in seq order (the soak on CI:
-- `reset-lease: ERROR: deadlock detected`): functions/outboxtop_lock_events.sql,
-- called first by retry, reset-lease, park and skip. Nothing in the tables
-- changes; the version stays, so that a database at any version upgrades through
-- the same steps, and tern needs a statement in it.
SELECT 1;
