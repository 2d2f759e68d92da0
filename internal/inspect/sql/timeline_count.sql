-- The aggregate's ($1, $2) events before seq $3 and after seq $4, over the
-- three places its events live (see timeline.sql).
SELECT {{template "timelineCount" args . "cmp" "< $3"}}, {{template "timelineCount" args . "cmp" "> $4"}}
{{- define "timelineCount"}}(SELECT count(*) FROM {{.schema}}.outbox_event WHERE aggregate_type = $1 AND aggregate_id = $2 AND published_at IS NULL AND seq {{.cmp}}) + (SELECT count(*) FROM {{.schema}}.outbox_event WHERE aggregate_type = $1 AND aggregate_id = $2 AND published_at IS NOT NULL AND seq {{.cmp}}) + (SELECT count(*) FROM {{.schema}}.outbox_event_archive WHERE aggregate_type = $1 AND aggregate_id = $2 AND seq {{.cmp}}){{end}}
