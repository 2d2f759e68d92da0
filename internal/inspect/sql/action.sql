-- One action's function, .fn (one of outboxtop_retry, outboxtop_reset_lease,
-- outboxtop_park, outboxtop_skip, outboxtop_replay), called with the
-- parameters .params; each returns (audit id, rows, event ids).
SELECT out_audit_id, out_rows, out_event_ids::text[] FROM {{.schema}}.{{.fn}}({{.params}})
