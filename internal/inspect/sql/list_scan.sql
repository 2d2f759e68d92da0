-- A page of a search inside payloads or headers that no index serves, its
-- work bounded: the first .scan rows of .table matching .where (the state, the
-- other filters, the page cursor) in .order are read, and one more to learn
-- whether there are more. Returned, in that order: the rows read that match
-- .terms, at most .limit, with true; and the last two rows read, with whether
-- they match. Each comes with its sort key .key as text and its position
-- among the rows read (.scan+1: there are more).
WITH w AS MATERIALIZED (
	SELECT event_id AS w_id, row_number() OVER (ORDER BY {{.order}}) AS w_n, coalesce({{.terms}}, false) AS w_hit
	FROM {{.schema}}.{{.table}} WHERE {{.where}} ORDER BY {{.order}} LIMIT {{.scan}} + 1
), p AS (
	(SELECT w_id, w_n, true AS w_hit FROM w WHERE w_hit AND w_n <= {{.scan}} ORDER BY w_n LIMIT {{.limit}})
	UNION
	(SELECT w_id, w_n, w_hit FROM w ORDER BY w_n DESC LIMIT 2)
)
SELECT {{template "eventColumns" args . "body" false}}, ({{.key}})::text AS sort_key, p.w_n, p.w_hit
FROM p JOIN {{.schema}}.{{.table}} ON event_id = p.w_id ORDER BY p.w_n
