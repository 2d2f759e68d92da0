-- The audit log, newest first, at most .limit rows matching .where (the
-- filter's conditions, joined with AND, its values passed as parameters): the
-- diff the action function computed, then the filter its caller passed.
SELECT audit_id, at, actor, action, rows, coalesce(reason, ''), coalesce(db_user, ''), diff, filter, coalesce(event_ids::text[], '{}') FROM {{.schema}}.outbox_audit{{if .where}} WHERE {{.where}}{{end}} ORDER BY audit_id DESC LIMIT {{.limit}}
