-- When the earliest scheduled event becomes ready (NULL when none): the relay
-- sets a timer for it.
SELECT min(available_at) FROM {{.schema}}.outbox_event
WHERE published_at IS NULL AND failed_at IS NULL AND available_at > now()
