-- Commit order per aggregate, for every writer (any client, COPY, multi-row
-- INSERT, several aggregates in one transaction). A BEFORE INSERT row trigger,
-- created by migrate with one argument, its mode (migrations.CommitOrder):
--
-- enforce: each row takes its aggregate's transaction advisory lock, waiting
-- for any open transaction that inserted an event of the same aggregate, and
-- only then takes seq (from outbox_event_order_seq: the identity's value was
-- drawn before the lock). A later seq of one aggregate is therefore drawn after
-- every earlier one committed or rolled back: seq order is commit order.
--
-- detect: the same locks, tried, and waited for only a moment (order_wait, see
-- below). A row whose lock another open transaction still holds is marked
-- unserialized; seq is the identity's. Every pair of one aggregate's events
-- committed out of seq order has a marked row (the
-- later seq was drawn while the earlier's transaction was open: either that
-- transaction held the lock and the later row is marked, or it did not, because
-- its own try had failed, and its row is marked), so an aggregate with no
-- marked row is in commit order; writers that serialize on the aggregate
-- before inserting (a row lock on the order, say) never mark one.
--
-- Every transaction's first row also takes (or tries) the table's order lock,
-- shared; a transaction past order_lock_rows rows takes it exclusively instead
-- of one lock per aggregate (enforce waits for the open writers and holds off
-- new ones until it commits; detect marks its rows while it cannot), so a COPY
-- of a million aggregates does not fill PostgreSQL's lock table, which holds
-- about max_locks_per_transaction locks per connection. The row count lives in
-- a transaction-local setting, outboxtop.order_rows.
--
-- The locks are the two-key advisory locks: the first key is the table's (migrate
-- derives it from the schema's name), the second an aggregate's hash or, for the
-- table's lock, 0. Keys that collide only serialize (or, detecting, mark) two aggregates
-- together. Invoker's rights: it runs as the inserting role, which needs no
-- grant for advisory locks and has USAGE on outbox_event_order_seq (migration
-- 021). Every function and operator is named with its schema, pg_catalog: the
-- caller's search_path could otherwise put another in front.
CREATE OR REPLACE FUNCTION {{.schema}}.outbox_event_commit_order() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    tbl constant integer := {{.order_key}};
    seen pg_catalog.text := pg_catalog.current_setting('outboxtop.order_rows', true);
    n integer := 1;
    key integer;
    got boolean;
    was pg_catalog.text;
BEGIN
    -- A corrected copy (outboxtop_correct, the only writer that may set
    -- correction_of) takes the seq of the event it replaces: its place in the
    -- order was taken when that event was inserted.
    IF NEW.correction_of IS NOT NULL THEN
        RETURN NEW;
    END IF;
    -- n is this row's place in the transaction's inserts, counted up to
    -- order_lock_rows + 1: that value, once stored, means the table's lock is
    -- held exclusively and nothing is left to take (taking a lock held
    -- already costs more than the rest of this function).
    IF seen IS NOT NULL AND NOT pg_catalog.texteq(seen, '') THEN
        n := pg_catalog.int4pl(seen::integer, 1);
    END IF;
    IF pg_catalog.int4le(n, {{.order_lock_rows}}) THEN
        PERFORM pg_catalog.set_config('outboxtop.order_rows', n::pg_catalog.text, true);
        key := pg_catalog.hashtext(pg_catalog.format('%s:%s%s',
            pg_catalog.length(NEW.aggregate_type), NEW.aggregate_type, NEW.aggregate_id));
    END IF;
    IF pg_catalog.texteq(TG_ARGV[0], 'enforce') THEN
        IF pg_catalog.int4le(n, {{.order_lock_rows}}) THEN
            PERFORM pg_catalog.pg_advisory_xact_lock_shared(tbl, 0);
            PERFORM pg_catalog.pg_advisory_xact_lock(tbl, key);
        ELSIF pg_catalog.int4eq(n, {{.order_lock_held}}) THEN
            PERFORM pg_catalog.pg_advisory_xact_lock(tbl, 0);
            PERFORM pg_catalog.set_config('outboxtop.order_rows', n::pg_catalog.text, true);
        END IF;
        NEW.seq := pg_catalog.nextval('{{.schema}}.outbox_event_order_seq'::pg_catalog.regclass);
        RETURN NEW;
    END IF;
    IF pg_catalog.int4le(n, {{.order_lock_rows}}) THEN
        got := pg_catalog.pg_try_advisory_xact_lock_shared(tbl, 0)
            AND pg_catalog.pg_try_advisory_xact_lock(tbl, key);
        IF NOT got THEN
            -- A writer that serialized on the aggregate (a row lock) may
            -- find the lock still held for a moment: PostgreSQL ends a
            -- transaction's row locks before its advisory locks. Wait that
            -- moment; a transaction still open after it is a concurrent
            -- writer. Only this path pays for the exception block's
            -- subtransaction.
            BEGIN
                was := pg_catalog.current_setting('lock_timeout');
                PERFORM pg_catalog.set_config('lock_timeout', '{{.order_wait}}', true);
                PERFORM pg_catalog.pg_advisory_xact_lock_shared(tbl, 0);
                PERFORM pg_catalog.pg_advisory_xact_lock(tbl, key);
                PERFORM pg_catalog.set_config('lock_timeout', was, true);
                got := true;
            EXCEPTION WHEN lock_not_available THEN
                got := false;
            END;
        END IF;
    ELSIF pg_catalog.int4eq(n, {{.order_lock_held}}) THEN
        -- Tried again at every row until it is held.
        got := pg_catalog.pg_try_advisory_xact_lock(tbl, 0);
        IF got THEN
            PERFORM pg_catalog.set_config('outboxtop.order_rows', n::pg_catalog.text, true);
        END IF;
    ELSE
        got := true;
    END IF;
    IF NOT got THEN
        NEW.unserialized := true;
    END IF;
    RETURN NEW;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outbox_event_commit_order() FROM PUBLIC;
