-- The topics events wait for because they do not exist, as the rows' last_error
-- says (MissingTopicError, then the topic's name up to the first space): for
-- `outboxtop status` and a console without a relay. Bounded whatever the table
-- holds, two windows of at most @window rows each, a row in both counted once:
--
--   the oldest unpublished, not failed events in seq order, read along
--   outbox_claim_seq_idx (which holds no failed row: a million of them cost
--   nothing): events that waited for a topic while no relay ran;
--   the soonest scheduled ones up to @horizon seconds ahead, read along
--   outbox_ready_idx past now(): while a relay runs, an event waiting for a
--   topic is tried again within its capped backoff, whatever the backlog
--   before it in seq order (50,000 older retries hid 2,000 such events from
--   the first window). Failed rows there are read, not counted, as in the
--   snapshot's third range; none of this range was published (a published
--   row's dead index entries, kept by a held horizon, are not past now()).
--
-- Grouped by topic, at most @topics topics, the most events first.
--
-- @prefix MissingTopicError, @window the events read in each window, @horizon
-- how far ahead the second looks, @topics the topics returned.
-- Returns each topic, its events read, and the latest attempt's time
-- (available_at less the backoff is not known: the row's available_at).
SELECT split_part(substr(w.last_error, length(@prefix::text) + 1), ' ', 1) AS topic,
       count(*)::bigint AS events, max(w.available_at) AS next_try
FROM (
    (SELECT e.seq, e.last_error, e.available_at, e.failed_at
     FROM {{.schema}}.outbox_event e
     WHERE e.published_at IS NULL AND e.failed_at IS NULL
     ORDER BY e.seq
     LIMIT @window)
    UNION
    (SELECT e.seq, e.last_error, e.available_at, e.failed_at
     FROM {{.schema}}.outbox_event e
     WHERE e.published_at IS NULL AND e.available_at > now()
       AND e.available_at <= (now() + @horizon::float8 * interval '1 second')
     ORDER BY e.available_at, e.created_at, e.event_id
     LIMIT @window)) w
WHERE w.failed_at IS NULL AND starts_with(w.last_error, @prefix::text)
GROUP BY 1
ORDER BY 2 DESC, 1
LIMIT @topics
