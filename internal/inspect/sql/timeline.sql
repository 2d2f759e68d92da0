-- Up to .limit events of the aggregate ($1, $2) matching .where, in seq
-- order (.order: ASC or DESC): the first .limit of each of the three places an
-- aggregate's events live, each along its index, merged. Each place has the
-- condition that lets an index by (aggregate_type, aggregate_id, seq) serve
-- it: outbox_aggregate_idx holds unpublished rows only and the opt-in
-- outbox_aggregate_published_idx published ones (not built by default),
-- so a condition on neither could use neither.
{{template "timelinePart" args . "table" "outbox_event" "cond" " AND published_at IS NULL" "archived" false}} UNION ALL {{template "timelinePart" args . "table" "outbox_event" "cond" " AND published_at IS NOT NULL" "archived" false}} UNION ALL {{template "timelinePart" args . "table" "outbox_event_archive" "cond" "" "archived" true}} ORDER BY 2 {{.order}} LIMIT {{.limit}}
{{- define "timelinePart"}}(SELECT {{template "eventColumns" args . "body" false}} FROM {{.schema}}.{{.table}} WHERE aggregate_type = $1 AND aggregate_id = $2{{.cond}}{{.where}} ORDER BY seq {{.order}} LIMIT {{.limit}}){{end}}
