-- Commit order per aggregate (functions/outbox_event_commit_order.sql). Two
-- additions; the trigger itself is created, changed or dropped by migrate
-- according to the mode it is given (migrations.CommitOrder):
--
-- outbox_event_order_seq: where seq comes from while the order is enforced. The
-- trigger must take seq after it holds its aggregate's lock, and the identity's
-- default is evaluated before any trigger fires; the identity keeps counting
-- the events inserted (the console's incoming rate reads it) and seq is taken
-- again from this sequence. Switching modes moves whichever sequence comes next
-- past the other, so seq stays increasing.
--
-- unserialized: set on a row inserted, with the order only detected, while
-- another open transaction had inserted an event of the same aggregate (or held
-- the order lock of the whole table): that aggregate's writers did not
-- serialize, so its seq order may not be its commit order. Never updated; NULL
-- otherwise. Adding it rewrites nothing; on an existing outbox migrate builds
-- the index concurrently, after this step's transaction (online.go).
CREATE SEQUENCE IF NOT EXISTS {{.schema}}.outbox_event_order_seq AS bigint
    OWNED BY {{.schema}}.outbox_event.seq;
ALTER TABLE {{.schema}}.outbox_event ADD COLUMN IF NOT EXISTS unserialized boolean;
CREATE INDEX IF NOT EXISTS outbox_unserialized_idx
    ON {{.schema}}.outbox_event (aggregate_type, aggregate_id, seq) WHERE unserialized;

-- The trigger runs as the role that inserts, which needs no grant on the
-- identity's sequence but does on this one. Any role may take values from it
-- (USAGE): that only leaves gaps in seq, which rolled-back inserts leave too;
-- setting it needs UPDATE, which no one but the owner has.
GRANT USAGE ON SEQUENCE {{.schema}}.outbox_event_order_seq TO PUBLIC;
