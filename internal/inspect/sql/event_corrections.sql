-- The corrected copies of event $1 (events with correction_of = $1), in the
-- outbox or archived.
SELECT event_id::text FROM {{.schema}}.outbox_event WHERE correction_of = $1::uuid
UNION SELECT event_id::text FROM {{.schema}}.outbox_event_archive WHERE correction_of = $1::uuid
