-- Drain state, for a drain that waits until nothing is left: is any batch in
-- flight anywhere, when is the next scheduled event due, how many events wait,
-- how many of those wait behind no failed event of their aggregate (those are
-- publishable, now or soon), and how many wait for a Kafka topic that does not
-- exist. An event waiting for a topic (last_error beginning @missing, the
-- relay's MissingTopicError) is scheduled again and again until an operator
-- creates it: a drain treats it as it treats a failed one — not due, not
-- publishable, and holding back the later events of its aggregate.
SELECT
    EXISTS (SELECT 1 FROM {{.schema}}.outbox_event WHERE published_at IS NULL AND failed_at IS NULL AND lease_until > now()),
    (SELECT min(available_at) FROM {{.schema}}.outbox_event WHERE published_at IS NULL AND failed_at IS NULL AND available_at > now()
        AND NOT coalesce(starts_with(last_error, @missing::text), false)),
    (SELECT count(*) FROM {{.schema}}.outbox_event WHERE published_at IS NULL AND failed_at IS NULL),
    (SELECT count(*) FROM {{.schema}}.outbox_event e WHERE e.published_at IS NULL AND e.failed_at IS NULL
        AND NOT coalesce(starts_with(e.last_error, @missing::text), false)
        AND NOT EXISTS (SELECT 1 FROM {{.schema}}.outbox_event f
            WHERE f.published_at IS NULL AND (f.failed_at IS NOT NULL OR starts_with(f.last_error, @missing::text))
              AND f.aggregate_type = e.aggregate_type AND f.aggregate_id = e.aggregate_id AND f.seq < e.seq)),
    (SELECT count(*) FROM {{.schema}}.outbox_event WHERE published_at IS NULL AND failed_at IS NULL
        AND starts_with(last_error, @missing::text))
