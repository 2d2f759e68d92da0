-- The heartbeats, freshest first, at most .limit. A relay is gone when it
-- has not beaten for .goneAfter intervals and did not say it stopped. An
-- interval is capped at an hour, as the beat caps it: a row stored before the
-- beat refused larger ones (800000000 ms overflowed interval_ms * 3, 700000000
-- kept a relay last seen 20 hours ago live) reads as an hour's.
SELECT holder,
	CASE WHEN state <> 'stopped'
		AND seen_at < now() - least(interval_ms, 3600000) * {{.goneAfter}} * interval '1 millisecond'
		THEN 'gone' ELSE state END,
	extract(epoch from now() - seen_at)::float8, started_at, least(interval_ms, 3600000), version, ordering,
	batch_size, in_flight
FROM {{.schema}}.outbox_relay ORDER BY seen_at DESC LIMIT {{.limit}}
