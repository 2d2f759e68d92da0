-- Once the insert trigger that woke the relays with pg_notify; migration 024
-- removed it (every producer's commit queued on NOTIFY's database-wide lock).
-- The version stays, so that a database at any version upgrades through the
-- same steps; tern needs a statement in it.
SELECT 1;
