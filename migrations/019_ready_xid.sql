-- ready_xid: the transaction that last made the row claimable — the insert (the
-- column's default), or an update that brought it back (a blocked row released,
-- a failed one retried, a lease given back: functions/outbox_event_ready_xid.sql
-- sets it). The relay's claim seeks from a position it tracks instead of from
-- the start of outbox_claim_idx: while a long transaction holds the xmin
-- horizon, the dead index entries of every row published since cannot be
-- removed, and a scan from the start re-reads all of them. A row can land
-- behind that position only by a commit the claim did not see; the claim finds
-- those by the transactions its previous snapshot saw in progress or had not
-- seen yet, through outbox_ready_xid_idx, whose lookups read only those
-- transactions' rows (relay package doc, "A held horizon").
--
-- In place: the column is added without a default (no rewrite), then given one
-- for new rows; existing rows keep NULL, which only the first claim of each
-- relay reads, from the start of the index. On an existing outbox migrate builds
-- the index concurrently, after this step's transaction (online.go).
ALTER TABLE {{.schema}}.outbox_event ADD COLUMN IF NOT EXISTS ready_xid xid8;
ALTER TABLE {{.schema}}.outbox_event ALTER COLUMN ready_xid SET DEFAULT pg_catalog.pg_current_xact_id();

-- The predicate names ready_xid so that only a read that asks for ready_xid
-- can use the index: beside outbox_claim_idx, whose predicate is the same
-- otherwise, the planner (which believes a partial index of unpublished rows
-- to be nearly empty) would read either in full for a claim's window.
CREATE INDEX IF NOT EXISTS outbox_ready_xid_idx
    ON {{.schema}}.outbox_event (ready_xid)
    WHERE ready_xid IS NOT NULL AND published_at IS NULL AND failed_at IS NULL AND NOT blocked;
