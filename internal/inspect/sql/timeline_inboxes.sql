-- The consumers, and which of them applied the events $1 and when: one probe
-- of consumed_event's primary key per consumer and event.
{{template "consumers" .}}SELECT c.consumer_name, e.event_id::text, {{finite "e.consumed_at"}} FROM consumers c LEFT JOIN {{.schema}}.consumed_event e ON e.consumer_name = c.consumer_name AND e.event_id = ANY($1::uuid[]) WHERE c.consumer_name IS NOT NULL ORDER BY c.consumer_name, e.consumed_at
