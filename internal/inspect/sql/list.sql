-- A page of events of .table (outbox_event or outbox_event_archive; .archived
-- for the archive) matching .where, sorted by .order, at most .limit, each
-- with its sort key .key as text (the page cursor).
SELECT {{template "eventColumns" args . "body" false}}, ({{.key}})::text AS sort_key FROM {{.schema}}.{{.table}} WHERE {{.where}} ORDER BY {{.order}} LIMIT {{.limit}}
