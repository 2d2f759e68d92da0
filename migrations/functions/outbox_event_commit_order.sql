-- Commit order per aggregate, enforced by the writers' locks: the opt-in mode
-- (migrations.CommitOrder; the default, detect, has no trigger at all). A
-- BEFORE INSERT row trigger, created by migrate with one argument, 'enforce',
-- while the table is in that mode.
--
-- Each row takes its aggregate's transaction advisory lock, waiting for any
-- open transaction that inserted an event of the same aggregate, and only then
-- takes seq (from outbox_event_order_seq: the identity's value was drawn before
-- the lock). A later seq of one aggregate is therefore drawn after every
-- earlier one committed or rolled back: seq order is commit order for every
-- writer (any client, COPY, multi-row INSERT, several aggregates in one
-- transaction).
--
-- Every transaction's first row also takes the table's order lock, shared; a
-- transaction past order_lock_rows rows takes it exclusively instead of one
-- lock per aggregate (it waits for the open writers and holds off new ones
-- until it commits), so a COPY of a million aggregates does not fill
-- PostgreSQL's lock table, which holds about max_locks_per_transaction locks
-- per connection. The row count lives in a transaction-local setting,
-- outboxtop.order_rows, which any session can set: so the setting only ever
-- chooses between locks, never skips one. A count past order_lock_rows takes
-- the table's lock exclusively at every row (a lock the transaction holds
-- already is found in its own lock table, without shared memory), and a count
-- below it takes the aggregate's; a forged value orders its own transaction
-- with more waiting, never with less.
--
-- The locks are the two-key advisory locks: the first key is the table's (migrate
-- derives it from the schema's name), the second an aggregate's hash or, for the
-- table's lock, 0. Keys that collide only serialize two aggregates together.
-- Advisory locks need no privilege, so any role of the database can take them
-- and make these inserts wait: that is the price of this mode, which is why it
-- is not the default. Invoker's rights: it runs as the inserting role, which
-- has USAGE on outbox_event_order_seq (migration 021). Every function and
-- operator is named with its schema, pg_catalog: the caller's search_path could
-- otherwise put another in front.
CREATE OR REPLACE FUNCTION {{.schema}}.outbox_event_commit_order() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    tbl constant integer := {{.order_key}};
    seen pg_catalog.text := pg_catalog.current_setting('outboxtop.order_rows', true);
    n integer := 1;
BEGIN
    -- A corrected copy (outboxtop_correct, the only writer that may set
    -- correction_of) takes the seq of the event it replaces: its place in the
    -- order was taken when that event was inserted.
    IF NEW.correction_of IS NOT NULL THEN
        RETURN NEW;
    END IF;
    IF seen IS NOT NULL AND seen ~ '^[0-9]{1,9}$' THEN
        n := pg_catalog.int4pl(seen::integer, 1);
    END IF;
    IF pg_catalog.int4le(n, {{.order_lock_rows}}) THEN
        PERFORM pg_catalog.set_config('outboxtop.order_rows', n::pg_catalog.text, true);
        PERFORM pg_catalog.pg_advisory_xact_lock_shared(tbl, 0);
        PERFORM pg_catalog.pg_advisory_xact_lock(tbl, pg_catalog.hashtext(pg_catalog.format('%s:%s%s',
            pg_catalog.length(NEW.aggregate_type), NEW.aggregate_type, NEW.aggregate_id)));
    ELSE
        IF pg_catalog.int4eq(n, {{.order_lock_held}}) THEN
            PERFORM pg_catalog.set_config('outboxtop.order_rows', n::pg_catalog.text, true);
        END IF;
        PERFORM pg_catalog.pg_advisory_xact_lock(tbl, 0);
    END IF;
    NEW.seq := pg_catalog.nextval('{{.schema}}.outbox_event_order_seq'::pg_catalog.regclass);
    RETURN NEW;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outbox_event_commit_order() FROM PUBLIC;
