-- What a correction of event $1 with payload $2 would change
-- (outboxtop_jsonb_diff), with the event's state: a preview that changes
-- nothing, for any role that reads outbox_event.
SELECT {{template "stateCase"}}, {{.schema}}.outboxtop_jsonb_diff(payload, $2::jsonb)
FROM {{.schema}}.outbox_event WHERE event_id = $1::uuid
