-- Settle: ends the lease of a batch's events that were not published, fenced
-- by the batch's lease token. Each is scheduled again after its delay (0: ready
-- now), its attempts reduced by its refund, failed when dead. A NULL error
-- keeps the previous last_error. A row an operator parked while it was in
-- flight (failed_at set: claims never take failed rows) keeps the park, its
-- error and its attempts: only its lease ends.
--
-- @token the batch's lease token; per event (arrays of equal length): @ids,
-- @delays_ms, @dead, @refunds (attempts to give back, 0 or 1), @errors (NULL:
-- keep last_error).
UPDATE {{.schema}}.outbox_event AS e
SET lease_token = NULL, lease_until = NULL,
    available_at = CASE WHEN f.dead OR e.failed_at IS NOT NULL THEN e.available_at ELSE now() + f.delay_ms::float8 * interval '1 millisecond' END,
    attempts = CASE WHEN e.failed_at IS NOT NULL THEN e.attempts ELSE greatest(e.attempts - f.refund, 0) END,
    last_error = CASE WHEN e.failed_at IS NOT NULL THEN e.last_error ELSE coalesce(f.err, e.last_error) END,
    failed_at = coalesce(e.failed_at, CASE WHEN f.dead THEN now() END)
FROM unnest(@ids::uuid[], @delays_ms::bigint[], @dead::bool[], @refunds::int[], @errors::text[]) AS f(id, delay_ms, dead, refund, err)
-- Each row by its primary key. "published_at IS NULL" is written as a join
-- clause (f.id IS NULL is never true where e.event_id = f.id holds, so the
-- test is the same): as a plain condition on e it let the planner read a
-- partial index of unpublished rows (outbox_aggregate_idx) in full instead,
-- which it believes nearly empty, and behind a held horizon that index keeps
-- every dead entry: 209,000 buffers and 400 ms a mark after minutes held.
WHERE e.event_id = f.id AND e.lease_token = @token AND (e.published_at IS NULL OR f.id IS NULL)
