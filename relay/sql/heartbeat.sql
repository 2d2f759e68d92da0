-- Heartbeat: this relay's row in outbox_relay (migration 010), through the
-- function that stamps it with the database's time and the session's role.
--
-- $1 holder, $2 state, $3 first beat of this process, $4 interval (ms),
-- $5 events in flight, $6 version, $7 ordering, $8 batch size.
SELECT {{.schema}}.outboxtop_relay_beat($1, $2, $3, $4, $5, $6, $7, $8)
