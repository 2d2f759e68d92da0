-- The blocked aggregates listed: the head of each aggregate ($1 types, $2
-- ids), with the ready, failed and all unpublished events behind it.
SELECT {{template "eventColumns" args . "archived" false "body" false}},
	{{template "behind" args . "cond" (printf " AND %s" (state "ready"))}},
	{{template "behind" args . "cond" " AND w.failed_at IS NOT NULL"}},
	{{template "behind" args . "cond" ""}}
FROM (SELECT e.* FROM unnest($1::text[], $2::text[]) k(t, id)
	CROSS JOIN LATERAL (SELECT * FROM {{.schema}}.outbox_event e WHERE e.published_at IS NULL
		AND e.aggregate_type = k.t AND e.aggregate_id = k.id ORDER BY e.seq LIMIT 1) e) e
{{- define "behind"}}(SELECT count(*) FROM {{.schema}}.outbox_event w WHERE w.published_at IS NULL
			AND w.aggregate_type = e.aggregate_type AND w.aggregate_id = e.aggregate_id AND w.seq > e.seq{{.cond}}){{end}}
