-- The ordered claim without a global lock and without rescanning trouble.
--
-- blocked is a hint the relay keeps: true on a row the claim found waiting
-- behind an earlier unpublished event of its aggregate that is failed,
-- scheduled or leased. Blocked rows leave the claim index, so a million events
-- waiting behind dead ones cost the claim nothing; they come back when the
-- relay publishes the run ahead of them (mark), an operator skips their blocker,
-- or the relay's sweep finds an aggregate whose head is blocked. The claim
-- decides order from the aggregate's head and seq, never from this column: a
-- wrong hint can delay an event, never reorder one. Adding a column with a
-- constant default rewrites nothing, and seed-shaped inserts get false.
ALTER TABLE {{.schema}}.outbox_event
    ADD COLUMN IF NOT EXISTS blocked boolean NOT NULL DEFAULT false;

-- The claim's window: claimable rows in available_at order. Scheduled rows sit
-- past now() and are never read; failed and blocked rows are not in it. seq
-- breaks ties so each aggregate's rows come in its own order.
CREATE INDEX IF NOT EXISTS outbox_claim_idx
    ON {{.schema}}.outbox_event (available_at, seq)
    WHERE published_at IS NULL AND failed_at IS NULL AND NOT blocked;

-- Blocked rows by aggregate: the mark's unblocking of the rows behind a
-- published run and the sweep. Empty while nothing waits.
CREATE INDEX IF NOT EXISTS outbox_blocked_idx
    ON {{.schema}}.outbox_event (aggregate_type, aggregate_id, seq)
    WHERE blocked AND published_at IS NULL;

-- outbox_claim_seq_idx (001) stays: the claim no longer reads it, but the console's
-- snapshot reads unpublished rows in seq order through it, and it costs inserts
-- only (the claim's UPDATE changes none of its columns).
