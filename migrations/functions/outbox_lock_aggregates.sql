-- Takes, in one canonical order, the order locks that inserting events of the
-- given aggregates (one array entry per event to insert) will take, so that
-- two transactions writing the same aggregates in different orders wait for
-- each other instead of deadlocking. Does nothing unless the order is enforced
-- (outbox_event_commit_order.sql). Call it first in the transaction; package
-- outbox's AddMany does. Past order_lock_rows events it takes the table's
-- order lock exclusively, as the trigger would at that row, and tells the
-- trigger so (a later upgrade from shared could deadlock with a writer that
-- waits for one of this transaction's aggregates). Invoker's rights, like the
-- trigger; callable by anyone (advisory locks need no grant).
CREATE OR REPLACE FUNCTION {{.schema}}.outbox_lock_aggregates(p_aggregate_type text[], p_aggregate_id text[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    tbl constant integer := {{.order_key}};
    n integer := COALESCE(pg_catalog.cardinality(p_aggregate_type), 0);
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                   WHERE t.tgrelid = '{{.schema}}.outbox_event'::pg_catalog.regclass
                     AND t.tgname OPERATOR(pg_catalog.=) 'outbox_event_commit_order'
                     AND pg_catalog.byteaeq(t.tgargs, '\x656e666f72636500'::pg_catalog.bytea)) THEN -- 'enforce', NUL-ended
        RETURN;
    END IF;
    IF pg_catalog.int4ne(n, COALESCE(pg_catalog.cardinality(p_aggregate_id), 0)) THEN
        RAISE EXCEPTION 'outbox_lock_aggregates: % aggregate types, % aggregate ids', n, pg_catalog.cardinality(p_aggregate_id);
    END IF;
    IF pg_catalog.int4gt(n, {{.order_lock_rows}}) THEN
        PERFORM pg_catalog.pg_advisory_xact_lock(tbl, 0);
        PERFORM pg_catalog.set_config('outboxtop.order_rows', '{{.order_lock_held}}', true);
        RETURN;
    END IF;
    PERFORM pg_catalog.pg_advisory_xact_lock_shared(tbl, 0);
    -- PERFORM runs the query to its end: every lock is taken, in key order.
    PERFORM pg_catalog.pg_advisory_xact_lock(tbl, k.key)
    FROM (SELECT DISTINCT pg_catalog.hashtext(pg_catalog.format('%s:%s%s',
                 pg_catalog.length(a.t), a.t, a.i)) AS key
          FROM ROWS FROM (pg_catalog.unnest(p_aggregate_type), pg_catalog.unnest(p_aggregate_id)) AS a(t, i)) k
    ORDER BY k.key;
END;
$$;
