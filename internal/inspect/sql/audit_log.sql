-- The audit log, newest first, at most .limit rows matching .where (the
-- filter's conditions, joined with AND, its values passed as parameters).
SELECT audit_id, at, actor, action, rows, coalesce(reason, ''), coalesce(db_user, ''), filter, coalesce(event_ids::text[], '{}') FROM {{.schema}}.outbox_audit{{if .where}} WHERE {{.where}}{{end}} ORDER BY audit_id DESC LIMIT {{.limit}}
