-- The insert trigger that wakes the relays (one pg_notify per statement) and its
-- function are in functions/outbox_event_notify.sql: a trigger needs its function,
-- and functions are applied by every migrate after the numbered migrations, so
-- the trigger is created there too. The version stays, so that a database at any
-- version upgrades through the same steps; tern needs a statement in it.
SELECT 1;
