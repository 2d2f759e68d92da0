-- The third range of the counts past the pass: the rows available later
-- (outbox_ready_idx past now(): scheduled or leased), at most $1, with the
-- earliest retry and the oldest pending age among them (and a ready one, NULL:
-- none is ready). Failed rows are read in this range too, and not counted:
-- naming failed_at in the condition made the planner read outbox_claim_seq_idx
-- whole and sort it (217 ms beside a storm instead of 20).
SELECT {{template "tally"}}, {{finite (printf "min(available_at) FILTER (WHERE %s)" (state "scheduled"))}}, {{template "tallyAges"}}
FROM (SELECT * FROM {{.schema}}.outbox_event WHERE published_at IS NULL AND available_at > now()
	ORDER BY available_at, created_at, event_id LIMIT $1) r
