-- Where a search's read (list_scan) ended when its page did not fill: the
-- last two of the first .scan+1 rows of .table matching .where in .order,
-- with their sort key .key as text, seq and position; a position of .scan+1
-- says there are more rows than the search read. No payload is read, so
-- where .where is a state an index covers, the index alone answers.
SELECT w_key::text, seq, w_n FROM (
	SELECT {{.key}} AS w_key, seq, row_number() OVER (ORDER BY {{.order}}) AS w_n
	FROM {{.schema}}.{{.table}} WHERE {{.where}} ORDER BY {{.order}} LIMIT {{.scan}} + 1
) w ORDER BY w_n DESC LIMIT 2
