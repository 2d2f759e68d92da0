-- One event of the archive by id ($1), with its payload and headers.
SELECT {{template "eventColumns" args . "archived" true "body" true}} FROM {{.schema}}.outbox_event_archive WHERE event_id = $1::uuid
