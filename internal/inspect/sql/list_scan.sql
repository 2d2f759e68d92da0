-- A page of a search inside payloads or headers that no index serves, its
-- work bounded: of the first .scan rows of .table matching .where (the state,
-- the other filters, the page cursor) in .order, those matching .terms, at
-- most .limit, each with its sort key .key as text and its position among the
-- rows read. The rows are read lazily, in .order along its index: a page that
-- fills stops reading there.
SELECT {{template "eventColumns" args . "body" false}}, ({{.key}})::text AS sort_key, w_n FROM (
	SELECT *, row_number() OVER (ORDER BY {{.order}}) AS w_n
	FROM {{.schema}}.{{.table}} WHERE {{.where}} ORDER BY {{.order}} LIMIT {{.scan}}
) w WHERE coalesce({{.terms}}, false) ORDER BY {{.order}} LIMIT {{.limit}}
