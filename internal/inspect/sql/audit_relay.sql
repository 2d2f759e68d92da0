-- The audit row of a relay paused or resumed: actor $1, action $2.
SELECT {{.schema}}.outboxtop_audit_relay($1, $2)
