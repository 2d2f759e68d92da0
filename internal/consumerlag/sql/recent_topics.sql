-- The topics the latest $1 published events and the latest $1 archived events
-- went to. Each branch walks its timestamp index backwards and stops after the
-- limit.
SELECT DISTINCT kafka_topic FROM (
	(SELECT kafka_topic FROM {{.schema}}.outbox_event WHERE published_at IS NOT NULL ORDER BY published_at DESC LIMIT $1)
	UNION ALL
	(SELECT kafka_topic FROM {{.schema}}.outbox_event_archive ORDER BY archived_at DESC LIMIT $1)
) recent WHERE kafka_topic IS NOT NULL
