-- One batch of an archive: actor $1, reason $2, the ids $3, the filter $4, and
-- $5 the audit row the first batch wrote (NULL for the first).
SELECT out_audit_id, out_rows, out_event_ids::text[], out_refused, out_refused_ids FROM {{.schema}}.outboxtop_archive($1, $2, $3, $4, $5)
