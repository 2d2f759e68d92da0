-- When the earliest scheduled event becomes ready (NULL when none): the relay
-- sets a timer for it. Along outbox_claim_idx from now(): scheduled rows sit
-- past now() in it, and no failed or blocked row does (a blocked row waits for
-- the mark that releases it, not for a time). The first row in the index's
-- order, run with sorting off (relay/claim.go): the planner, which believes
-- every partial index of unpublished rows nearly empty, otherwise reads
-- outbox_claim_seq_idx in full and sorts, and behind a held horizon that read
-- took 0.5–3 s after 15 minutes of 1,000 events/s (every dead entry since the
-- horizon), each time the relay went idle.
SELECT (SELECT e.available_at FROM {{.schema}}.outbox_event e
        WHERE e.published_at IS NULL AND e.failed_at IS NULL AND NOT e.blocked AND e.available_at > now()
        ORDER BY e.available_at, e.seq
        LIMIT 1)
