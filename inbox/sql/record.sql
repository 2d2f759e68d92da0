-- Records that consumer $1 applied event $2; no row when it already had.
INSERT INTO {{.schema}}.consumed_event (consumer_name, event_id) VALUES ($1, $2)
ON CONFLICT DO NOTHING
