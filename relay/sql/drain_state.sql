-- Drain state, for a drain that waits until nothing is left: is any batch in
-- flight anywhere, when is the next scheduled event due, how many events wait,
-- and how many of those wait behind no failed event of their aggregate (those
-- are publishable, now or soon).
SELECT
    EXISTS (SELECT 1 FROM {{.schema}}.outbox_event WHERE published_at IS NULL AND failed_at IS NULL AND lease_until > now()),
    (SELECT min(available_at) FROM {{.schema}}.outbox_event WHERE published_at IS NULL AND failed_at IS NULL AND available_at > now()),
    (SELECT count(*) FROM {{.schema}}.outbox_event WHERE published_at IS NULL AND failed_at IS NULL),
    (SELECT count(*) FROM {{.schema}}.outbox_event e WHERE e.published_at IS NULL AND e.failed_at IS NULL
        AND NOT EXISTS (SELECT 1 FROM {{.schema}}.outbox_event f
            WHERE f.published_at IS NULL AND f.failed_at IS NOT NULL
              AND f.aggregate_type = e.aggregate_type AND f.aggregate_id = e.aggregate_id AND f.seq < e.seq))
