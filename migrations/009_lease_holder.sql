-- Which relay holds a lease, and the indexes the aggregate timeline and the audit
-- log's event filter lacked.
--
-- On an existing outbox migrate builds the indexes below concurrently, after
-- this step's transaction (online.go): writers go on meanwhile.
-- Adding the nullable column rewrites nothing.

-- lease_holder: the relay that made the latest claim of the row, as "host:pid"
-- (relay.Config.Holder), set with the lease token in the same UPDATE. It is not
-- cleared: only on a leased row does it name the current holder ("held by" in
-- trace, "holder" in the console); afterwards it is the last relay that claimed
-- the row ("last relay"), and on a published row the one that published it
-- ("published by": the mark is fenced by the token written with it). NULL on rows
-- no relay has claimed since this migration. No index names it, so the claim's
-- UPDATE stays HOT. Archived rows keep it: the functions that move rows to the
-- archive (functions/) copy the column.
ALTER TABLE {{.schema}}.outbox_event ADD COLUMN IF NOT EXISTS lease_holder text;
ALTER TABLE {{.schema}}.outbox_event_archive ADD COLUMN IF NOT EXISTS lease_holder text;

-- A relay role set up with `outboxtop grants --role relay` before this migration
-- may update lease_token but not the new column, and its claims would fail with
-- permission denied the moment the upgraded relay starts: every role holding a
-- column grant to update lease_token gets one for lease_holder too (the grants
-- the current `outboxtop grants --role relay` prints).
DO $holder$
DECLARE
    r regrole;
BEGIN
    FOR r IN
        SELECT DISTINCT (a.acl).grantee::regrole
        FROM (SELECT aclexplode(attacl) AS acl FROM pg_attribute
              WHERE attrelid = '{{.schema}}.outbox_event'::regclass AND attname = 'lease_token'
                AND attacl IS NOT NULL) a
        WHERE (a.acl).privilege_type = 'UPDATE' AND (a.acl).grantee <> 0
    LOOP
        EXECUTE format('GRANT UPDATE (lease_holder) ON {{.schema}}.outbox_event TO %s', r);
    END LOOP;
END
$holder$;

-- The aggregate timeline (`outboxtop events --aggregate`, the console's aggregate
-- view) reads an aggregate's history in seq order: outbox_aggregate_idx (001)
-- serves its unpublished rows, this index its archived ones.
--
-- Deliberately NOT created: an index of published rows by aggregate
-- (outbox_event (aggregate_type, aggregate_id, seq) WHERE published_at IS NOT
-- NULL). Every mark would add an entry to it — the relay's hot path, for a triage
-- read — and it cost the SQL ceiling 5–9% (BENCHMARKS.md, "Indexes the relay
-- pays for"). Without it the timeline's published part reads the published rows
-- the outbox still holds (bounded by --archive-after). An operator who wants that
-- part fast on a large published history can build it, and the timeline uses it:
--   CREATE INDEX CONCURRENTLY outbox_aggregate_published_idx
--       ON <schema>.outbox_event (aggregate_type, aggregate_id, seq) WHERE published_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_event_archive_aggregate_idx
    ON {{.schema}}.outbox_event_archive (aggregate_type, aggregate_id, seq);

-- The audit rows that touched an event (`outboxtop trace`, `outboxtop audit
-- --event`): event_ids @> ARRAY[id] reads this index instead of every audit row.
CREATE INDEX IF NOT EXISTS outbox_audit_event_ids_idx
    ON {{.schema}}.outbox_audit USING gin (event_ids);
