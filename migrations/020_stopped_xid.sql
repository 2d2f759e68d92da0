-- outbox_stopped_xid_idx: the unpublished rows that outbox_ready_xid_idx
-- leaves out, failed or blocked ones, by ready_xid. The console's snapshot
-- reads from what its previous snapshot saw, as the relay's claim reads from
-- its position, and looks up the rows that transactions the previous snapshot
-- did not see inserted or retried (inspect package doc, "A held horizon"); a
-- row inserted late and then blocked by the relay, or failed, must be found
-- too. Between them the two indexes hold every unpublished row that has a
-- ready_xid. A separate index, not a wider outbox_ready_xid_idx: beside a
-- predicate that no longer names blocked, the planner (which believes partial
-- indexes of unpublished rows nearly empty) read outbox_claim_seq_idx from its
-- start for the claim's lookups. Its predicate names ready_xid, so no other
-- read can choose it; failing or blocking a row is already an update that is
-- not HOT, and the claim's and the mark's stay HOT.
--
-- In place, no rewrite; on an existing outbox migrate builds the index
-- concurrently, after this step's transaction (online.go).
CREATE INDEX IF NOT EXISTS outbox_stopped_xid_idx
    ON {{.schema}}.outbox_event (ready_xid)
    WHERE ready_xid IS NOT NULL AND published_at IS NULL AND (failed_at IS NOT NULL OR blocked);
