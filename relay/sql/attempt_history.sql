-- Attempt history: one outbox_attempt row per event of a settled batch whose
-- try went wrong, written after the settle and only then, so a batch that is
-- published whole writes nothing. Separate from the settle: a role that may
-- not add history (its grants predate the table) still settles its events.
--
-- @holder this relay's name; per event (arrays of equal length): @ids,
-- @attempts (the attempt it was, as claimed), @classes, @outcomes, @errors,
-- @codes (Kafka's error code, NULL when none), @backoffs_ms (NULL when not
-- scheduled again).
INSERT INTO {{.schema}}.outbox_attempt (event_id, attempt, lease_holder, class, outcome, error, kafka_code, backoff_ms)
SELECT f.id, f.attempt, @holder::text, f.class, f.outcome, f.err, f.code, f.backoff_ms
FROM unnest(@ids::uuid[], @attempts::int[], @classes::text[], @outcomes::text[], @errors::text[],
            @codes::int2[], @backoffs_ms::bigint[]) AS f(id, attempt, class, outcome, err, code, backoff_ms)
