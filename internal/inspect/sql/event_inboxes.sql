-- The consumers that applied event $1, and when: per consumer through the
-- primary key (consumer_name, event_id), so no index on event_id alone is
-- added to the consumers' insert path.
{{template "consumers" .}}SELECT c.consumer_name, {{finite "e.consumed_at"}} FROM consumers c JOIN {{.schema}}.consumed_event e ON e.consumer_name = c.consumer_name AND e.event_id = $1::uuid ORDER BY e.consumed_at
