-- The rescue: expired leases behind the claim's position, given back. A claim
-- reads outbox_claim_idx from a position the relay keeps (claimCursor in
-- cursor.go), and finds rows that land behind it through ready_xid. One kind
-- of row lands there with no write at all: a row another relay claimed from
-- behind this one's position, whose lease then ran out (that relay died, or
-- froze past its lease). This statement ends such leases, as release does for
-- a batch given back: the ready_xid trigger records this transaction, so the
-- next claim finds the rows through outbox_ready_xid_idx, and available_at
-- moves to now() so the position they pull the window back to is the end of
-- the index, not where they were. A lease that ran out is claimable already;
-- ending it changes who may take the row, not whether: its holder's mark is
-- fenced either way.
--
-- It reads outbox_claim_idx from its start up to the position: under a held
-- horizon that walk grows with every dead entry kept, which is why it runs
-- beside the claims (rescueLoop), paced, and never in their way. Rows are
-- locked SKIP LOCKED: a row a claim holds is that claim's.
--
-- @from_at, @from_seq: the claim's position; @limit: the most rows a pass ends.
WITH expired AS (
    SELECT r.ctid AS tid
    FROM {{.schema}}.outbox_event r
    WHERE r.published_at IS NULL AND r.failed_at IS NULL AND NOT r.blocked
      AND (r.available_at, r.seq) < (@from_at::timestamptz, @from_seq::bigint)
      AND r.lease_until <= now()
    ORDER BY r.available_at, r.seq
    LIMIT @limit
    FOR UPDATE SKIP LOCKED
)
UPDATE {{.schema}}.outbox_event AS e
SET lease_token = NULL, lease_until = NULL, available_at = now()
FROM expired x
WHERE e.ctid = x.tid
  AND e.published_at IS NULL AND e.failed_at IS NULL AND NOT e.blocked
  AND e.lease_until <= now()
