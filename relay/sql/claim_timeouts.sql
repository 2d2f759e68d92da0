-- The claim transaction's timeouts, its first statement: a lock wait ends
-- after $1, and PostgreSQL ends the session if the relay stops inside the
-- transaction for $2 (both like '500ms') — idle, or not reading the claim's
-- result: tcp_user_timeout ends a connection whose data stays unacknowledged
-- (the relay's socket buffers full) for $2, where a backend blocked writing
-- to a stopped process would otherwise wait for it without end (over TCP; a
-- Unix-domain socket has no such timeout). They go in their own round trip:
-- parsing a statement already takes its table locks.
--
-- JIT is off for the transaction: the claim is a short statement whose
-- estimated cost (a window of thousands of rows, the storm's statistics) passes
-- jit_above_cost, and compiling its 190 expressions took 305 ms of a 336 ms
-- claim beside a storm.
--
-- Sorting is off too (a plan that needs a sort still gets one): the planner
-- believes every partial index of unpublished rows nearly empty, and after 30
-- minutes of a held horizon chose to read outbox_claim_seq_idx in full and
-- sort, 2.1M buffers and 5.6 s, rather than seek outbox_claim_idx in order.
--
-- It also returns the transactions this statement's snapshot does not see
-- committed: those at or after xmax, and those in progress (xip). The next
-- claim looks for rows they made claimable behind its position; a snapshot
-- taken before the claim's own sees less, so it may name more, never fewer.
SELECT set_config('lock_timeout', $1, true), set_config('idle_in_transaction_session_timeout', $2, true),
       set_config('tcp_user_timeout', $2, true), set_config('jit', 'off', true),
       set_config('enable_sort', 'off', true),
       pg_snapshot_xmax(pg_current_snapshot()), ARRAY(SELECT pg_snapshot_xip(pg_current_snapshot()))
