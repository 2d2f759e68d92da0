-- Up to .limit events of the outbox and the archive matching .where, by id:
-- the candidates an id or the start of one names.
(SELECT {{template "eventColumns" args . "archived" false "body" false}} FROM {{.schema}}.outbox_event WHERE {{.where}} ORDER BY event_id LIMIT {{.limit}}) UNION ALL (SELECT {{template "eventColumns" args . "archived" true "body" false}} FROM {{.schema}}.outbox_event_archive WHERE {{.where}} ORDER BY event_id LIMIT {{.limit}}) ORDER BY 1 LIMIT {{.limit}}
