-- inserted: how many events have been inserted (the identity of seq's last
-- value), polled for wake-ups (wake.go). No parameters.
SELECT {{.schema}}.outboxtop_inserted()
