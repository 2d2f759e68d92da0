-- A paced run's chunks so far, oldest first: the audit rows written since the
-- run started ($2, seconds since the epoch, the outbox_audit_at_idx range) by
-- this database login whose filter names the run ($1, '{"run": {"id": …}}').
-- Only the caller's own login: another login's rows, whatever their filter
-- says, never steer this one's resume.
SELECT action, filter, rows, coalesce(reason, ''), audit_id
FROM {{.schema}}.outbox_audit
WHERE at >= to_timestamp($2) AND db_user = session_user AND filter @> $1::jsonb
ORDER BY audit_id
