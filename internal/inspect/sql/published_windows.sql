-- The newest $1 rows published within the hour, newest first, counted by
-- window; their span, and how far back publishing goes at all (NULL when
-- nothing was published).
SELECT count(*),
	count(*) FILTER (WHERE published_at > now() - interval '10 seconds'),
	count(*) FILTER (WHERE published_at > now() - interval '1 minute'),
	count(*) FILTER (WHERE published_at > now() - interval '5 minutes'),
	coalesce({{nullAge "min(published_at)"}}, 0),
	(SELECT {{nullAge "min(published_at)"}} FROM {{.schema}}.outbox_event WHERE published_at IS NOT NULL)
FROM (SELECT published_at FROM {{.schema}}.outbox_event
	WHERE published_at IS NOT NULL AND published_at > now() - interval '1 hour'
	ORDER BY published_at DESC LIMIT $1) newest
