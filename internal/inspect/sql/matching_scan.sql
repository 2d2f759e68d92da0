-- How many of the first .scan rows of .table matching .where (in no
-- particular order) match .terms, and how many were read (.scan+1: there are
-- more): a count of a search inside payloads or headers that no index serves.
SELECT count(*) FILTER (WHERE w_hit AND w_n <= {{.scan}}), coalesce(max(w_n), 0) FROM (
	SELECT row_number() OVER () AS w_n, coalesce({{.terms}}, false) AS w_hit
	FROM (SELECT payload, headers FROM {{.schema}}.{{.table}} WHERE {{.where}} LIMIT {{.scan}} + 1) r
) w
