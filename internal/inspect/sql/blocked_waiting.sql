-- The ready events behind each head ($1 types, $2 ids, $3 the head's seq):
-- the events that wait in the aggregate when its head blocks it.
SELECT k.t, k.id, (SELECT count(*) FROM {{.schema}}.outbox_event w WHERE w.published_at IS NULL
		AND w.aggregate_type = k.t AND w.aggregate_id = k.id AND w.seq > k.seq AND {{state "ready"}})
FROM unnest($1::text[], $2::text[], $3::bigint[]) AS k(t, id, seq)
