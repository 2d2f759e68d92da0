-- The topics events wait for because they do not exist, as the rows' last_error
-- says (MissingTopicError, then the topic's name up to the first space): for
-- `outboxtop status`, which runs without a relay. Bounded whatever the table
-- holds: the oldest @window unpublished, not failed events in seq order, read
-- along outbox_claim_seq_idx (which holds no failed row: a million of them cost
-- nothing), grouped by topic, at most @topics topics, the most events first.
--
-- @prefix MissingTopicError, @window the events read, @topics the topics returned.
-- Returns each topic, its events in the window, and the latest attempt's time
-- (available_at less the backoff is not known: the row's available_at).
SELECT split_part(substr(w.last_error, length(@prefix::text) + 1), ' ', 1) AS topic,
       count(*)::bigint AS events, max(w.available_at) AS next_try
FROM (
    SELECT e.last_error, e.available_at
    FROM {{.schema}}.outbox_event e
    WHERE e.published_at IS NULL AND e.failed_at IS NULL
    ORDER BY e.seq
    LIMIT @window) w
WHERE starts_with(w.last_error, @prefix::text)
GROUP BY 1
ORDER BY 2 DESC, 1
LIMIT @topics
