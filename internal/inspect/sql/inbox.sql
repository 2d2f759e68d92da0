-- The consumers (at most 100), each with what it applied in the last five
-- minutes and when it last did.
{{template "consumers" .}}
SELECT c.consumer_name,
	(SELECT count(*) FROM {{.schema}}.consumed_event e WHERE e.consumer_name = c.consumer_name AND e.consumed_at > now() - interval '5 minutes'),
	(SELECT {{finite "max(consumed_at)"}} FROM {{.schema}}.consumed_event e WHERE e.consumer_name = c.consumer_name)
FROM consumers c WHERE c.consumer_name IS NOT NULL LIMIT 100
