-- Mark: records a batch's acknowledged events as published with their Kafka
-- coordinates, fenced by the batch's lease token (a row whose lease another
-- claim took is not touched). A row an operator parked while it was in flight
-- stays parked (Kafka has it; a retry publishes it again): only its lease
-- ends. RETURNING tells the two apart: one row per event touched, true when it
-- stayed parked. A published row's last_error is cleared: it was the error of
-- an earlier attempt, and readers (trace, the console) show it as the event's
-- current trouble; attempts still tells that it took more than one.
--
-- @token the batch's lease token; @ids, @topics, @partitions, @offsets the
-- acknowledged events and where Kafka put them (arrays of equal length).
UPDATE {{.schema}}.outbox_event AS e
SET published_at = CASE WHEN e.failed_at IS NULL THEN now() END, lease_until = NULL,
    last_error = CASE WHEN e.failed_at IS NULL THEN NULL ELSE e.last_error END,
    kafka_topic = CASE WHEN e.failed_at IS NULL THEN m.topic ELSE e.kafka_topic END,
    kafka_partition = CASE WHEN e.failed_at IS NULL THEN m.part ELSE e.kafka_partition END,
    kafka_offset = CASE WHEN e.failed_at IS NULL THEN m.off ELSE e.kafka_offset END
FROM unnest(@ids::uuid[], @topics::text[], @partitions::int[], @offsets::bigint[]) AS m(id, topic, part, off)
-- Each row by its primary key. "published_at IS NULL" is written as a join
-- clause (m.id IS NULL is never true where e.event_id = m.id holds, so the
-- test is the same): as a plain condition on e it let the planner read a
-- partial index of unpublished rows (outbox_aggregate_idx) in full instead,
-- which it believes nearly empty, and behind a held horizon that index keeps
-- every dead entry: 209,000 buffers and 400 ms a mark after minutes held.
WHERE e.event_id = m.id AND e.lease_token = @token AND (e.published_at IS NULL OR m.id IS NULL)
RETURNING e.failed_at IS NOT NULL
