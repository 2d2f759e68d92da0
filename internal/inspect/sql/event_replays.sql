-- The events inserted as replays of event $1 (not the event itself, when it
-- was replayed under its own id).
SELECT event_id::text FROM {{.schema}}.outbox_event WHERE replay_of = $1::uuid AND event_id <> $1::uuid
UNION SELECT event_id::text FROM {{.schema}}.outbox_event_archive WHERE replay_of = $1::uuid AND event_id <> $1::uuid
