-- Leave room in every page so the claim's UPDATE (lease_token, lease_until,
-- attempts: no indexed column) can be a HOT update: the new row version stays on
-- its page and no index is touched. Without it, a freshly filled page has no room
-- and each claimed row costs an insert into every index. Applies to pages written
-- from now on.
ALTER TABLE {{.schema}}.outbox_event SET (fillfactor = 50);

-- The outbox is a queue: rows are updated twice and then sit published. Vacuum
-- and analyze it after a small share of changes instead of the default 20%, so
-- dead versions are pruned and the claim's plans see current statistics.
ALTER TABLE {{.schema}}.outbox_event SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);
