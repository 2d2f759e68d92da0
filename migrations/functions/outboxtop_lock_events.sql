-- Locks the given events, in seq order, waiting for each. The actions pass the
-- events that were in their states when they began and then change only those,
-- so no row they change is locked out of order (one that entered the states
-- meanwhile is left alone). Internal: called by the SECURITY DEFINER actions (as
-- the schema's owner), granted to no one.
--
-- Each action that changes unpublished rows (retry, reset-lease, park, skip) calls
-- it first. Locked in whatever order its plan read them (event_id or physical
-- order), two actions on overlapping events, or an action and the relay's unblock
-- after a mark, could each hold a row the other waited for. Statements that lock
-- in one order (this one and relay/sql/unblock_after.sql) wait for each other in
-- turn, never in a circle. The relay's claim, renew, release and sweeps never wait
-- for a row lock (SKIP LOCKED), and neither does skip's unblocking of the rows
-- behind what it skipped. The relay's mark and settle still lock in their plan's
-- order (see relay's package doc for why): an action on a batch whose mark is
-- running can still deadlock with it, and each side then does its statement
-- again. archive and replay touch only published and archived rows, which no relay
-- statement waits for, and lock nothing first.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_lock_events(p_ids uuid[])
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, {{.schema}}, pg_temp AS $$
BEGIN
    -- PERFORM runs the query to its end: every row is locked, as the sort
    -- hands them out.
    PERFORM 1 FROM {{.schema}}.outbox_event e
    WHERE e.event_id = ANY (p_ids)
    ORDER BY e.seq
    FOR UPDATE;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_lock_events(uuid[]) FROM PUBLIC;
