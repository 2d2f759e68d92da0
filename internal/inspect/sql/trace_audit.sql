-- The audit rows naming event $1, oldest first, along
-- outbox_audit_event_ids_idx (GIN on event_ids): event_ids @> ARRAY[id] is
-- the shape it serves, where id = ANY (event_ids) would read every row.
SELECT audit_id, at, actor, action, rows, coalesce(reason, ''), coalesce(db_user, ''), diff FROM {{.schema}}.outbox_audit WHERE event_ids @> ARRAY[$1::uuid] ORDER BY audit_id
