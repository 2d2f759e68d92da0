-- One event of outbox_event by id ($1), with its payload and headers.
SELECT {{template "eventColumns" args . "archived" false "body" true}} FROM {{.schema}}.outbox_event WHERE event_id = $1::uuid
