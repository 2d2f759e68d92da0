{{/*
The fragments the statements share. The state conditions themselves are
package wire's ({{state "ready"}} and the others, on bare column names).
*/}}

{{- define "minSeq"}}'-9223372036854775808'::bigint{{end}}

{{- /* wire's state of a row, in SQL, from its conditions. */}}
{{- define "stateCase"}}CASE WHEN {{state "published"}} THEN 'published' WHEN {{state "failed"}} THEN 'failed' WHEN {{state "leased"}} THEN 'leased' WHEN {{state "ready"}} THEN 'ready' ELSE 'scheduled' END{{end}}

{{- /*
The select list of an event, in the order scanEvent reads: .archived for a
row of outbox_event_archive, .body to read its payload and headers (else
NULLs in their place).
*/}}
{{- define "eventColumns"}}event_id::text, seq, {{if .archived}}'archived'{{else}}{{template "stateCase"}}{{end}}, aggregate_type, aggregate_id, event_type,
		coalesce(topic, ''), {{finite "created_at"}}, {{finite "available_at"}}, attempts,
		coalesce(lease_token::text, ''), {{finite "lease_until"}}, coalesce(lease_holder, ''),
		coalesce({{state "expired"}}, false), {{finite "published_at"}}, {{finite "failed_at"}},
		coalesce(last_error, ''), coalesce(kafka_topic, ''), kafka_partition, kafka_offset, coalesce(replay_of::text, ''), coalesce(correction_of::text, ''),
		{{if .archived}}{{finite "archived_at"}}{{else}}{{finite "NULL::timestamptz"}}{{end}}, {{age "created_at"}}, octet_length(payload::text), {{if .body}}payload, headers{{else}}NULL::jsonb, NULL::jsonb{{end}}
{{- end}}

{{- /*
Whether .row heads its aggregate: no earlier event of the aggregate is
unpublished. .row is how the enclosing query names the row, not p, which
names the earlier events. It walks outbox_aggregate_idx.
*/}}
{{- define "head"}}NOT EXISTS (SELECT 1 FROM {{.schema}}.outbox_event p
			WHERE p.published_at IS NULL AND p.aggregate_type = {{.row}}.aggregate_type
			AND p.aggregate_id = {{.row}}.aggregate_id AND p.seq < {{.row}}.seq){{end}}

{{- /*
Whether .row blocks its aggregate: it is failed or scheduled and heads the
aggregate, so the aggregate's later events wait behind it. A blocked aggregate
is one that has a blocker. The state conditions use bare column names, which
must resolve to .row.
*/}}
{{- define "blocker"}}({{state "failed"}} OR {{state "scheduled"}}) AND {{template "head" .}}{{end}}

{{- /*
Whether an aggregate's head p blocks it: failed or scheduled. The ready
events behind such a head wait; any other head (ready, leased) lets the relay
go on.
*/}}
{{- define "headBlocks"}}(p.failed_at IS NOT NULL OR (p.available_at > now() AND (p.lease_until IS NULL OR p.lease_until <= now()))){{end}}

{{- /*
Whether .row waits behind a blocker: the first unpublished event of its
aggregate before it (the aggregate's head) is failed or scheduled, so the
ordered relay will not take the row yet. It is one probe of
outbox_aggregate_idx for that head (LIMIT 1), so its cost does not grow with
the aggregate's backlog: asking instead whether any earlier event is failed or
scheduled read every earlier event of the aggregate, 10,000 for a hot
aggregate's newest row (0.85 s for a 500-row sample beside a storm). An event
behind a ready or leased head with a blocker further on is not waiting yet: it
is once the relay has published the head, which it does next.
*/}}
{{- define "waiting"}}coalesce((SELECT {{template "headBlocks"}}
			FROM {{.schema}}.outbox_event p
			WHERE p.published_at IS NULL AND p.aggregate_type = {{.row}}.aggregate_type
			  AND p.aggregate_id = {{.row}}.aggregate_id AND p.seq < {{.row}}.seq
			ORDER BY p.seq LIMIT 1), false){{end}}

{{- /* The consumers seen in consumed_event, one probe of its primary key each (a skip scan). */}}
{{- define "consumers"}}WITH RECURSIVE consumers(consumer_name) AS (
		(SELECT consumer_name FROM {{.schema}}.consumed_event ORDER BY consumer_name LIMIT 1)
		UNION ALL
		SELECT (SELECT n.consumer_name FROM {{.schema}}.consumed_event n WHERE n.consumer_name > c.consumer_name ORDER BY n.consumer_name LIMIT 1)
		FROM consumers c WHERE c.consumer_name IS NOT NULL
	) {{end}}

{{- /* The columns the snapshot's pass reads of a row. */}}
{{- define "passColumns"}}seq, event_type, aggregate_type, aggregate_id, created_at, available_at, lease_holder, lease_token, lease_until, attempts, failed_at{{end}}

{{- /*
The pass's late rows through outbox_ready_xid_idx (not failed, not blocked),
and the stopped ones through outbox_stopped_xid_idx (failed or blocked), each
with the predicate of its index, for the transactions .xid says. OFFSET 0 keeps
each read to its own seeks (an OR would read a whole index).
*/}}
{{- define "late"}}SELECT {{template "passColumns"}} FROM {{.schema}}.outbox_event r WHERE r.ready_xid {{.xid}}
					AND r.published_at IS NULL AND r.failed_at IS NULL AND NOT r.blocked OFFSET 0{{end}}
{{- define "stopped"}}SELECT {{template "passColumns"}} FROM {{.schema}}.outbox_event r WHERE r.ready_xid {{.xid}}
					AND r.published_at IS NULL AND (r.failed_at IS NOT NULL OR r.blocked) OFFSET 0{{end}}

{{- /* Rows by state, for the counts past the pass. */}}
{{- define "tally"}}count(*), count(*) FILTER (WHERE {{state "ready"}}), count(*) FILTER (WHERE {{state "scheduled"}}),
		count(*) FILTER (WHERE {{state "leased"}}), count(*) FILTER (WHERE {{state "expired"}}){{end}}
{{- /*
The oldest ages among rows by state, for the counts past the pass: now() −
the oldest pending row's created_at, and how long the longest-waiting ready
row has been claimable (NULL: none).
*/}}
{{- define "tallyAges"}}{{nullAge (printf "min(created_at) FILTER (WHERE %s OR %s)" (state "ready") (state "scheduled"))}},
		{{nullAge (printf "min(greatest(created_at, available_at)) FILTER (WHERE %s)" (state "ready"))}}{{end}}
{{- define "pastScanColumns"}}aggregate_type, aggregate_id, seq, created_at, available_at, lease_until, lease_token, published_at, failed_at{{end}}
