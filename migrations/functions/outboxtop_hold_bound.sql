-- Bounds what the caller's transaction can do after an action, and leaves a
-- trace that outlives a rollback. Internal: called first by every action that
-- changes rows (retry, reset-lease, park, skip, archive, replay), granted to no
-- one.
--
-- An action's row locks last until its caller's transaction ends, and a
-- function cannot end it: `BEGIN; SELECT outboxtop_reset_lease(…); SELECT
-- pg_sleep(…); ROLLBACK` held the events from the relays (their claim skips
-- locked rows) and, rolled back, left no audit row. PostgreSQL 15 lets a
-- function neither commit nor tell an explicit transaction block from the
-- implicit one of a single statement (statement_timestamp() differs from now()
-- in both under the extended protocol), so instead the rest of the transaction
-- is bounded: statement_timeout and idle_in_transaction_session_timeout are
-- lowered to hold_bound (5 s) for it (SET LOCAL, as set_config(…, true) here
-- does; the caller's values come back when it ends). A statement after the
-- action, or several in one query string, is cancelled after that time and a
-- transaction left idle ends with its session; either releases the rows.
-- What stays possible is recorded in SECURITY.md: the caller may SET the
-- timeouts again after the call, or make the call part of a longer statement.
--
-- The trace: a LOG line in the server log (written whatever the transaction
-- does, at the default log_min_messages) naming the action, the actor, the
-- database login, the backend and the number of events, so an action that was
-- rolled back, and so left no audit row, still shows.
CREATE OR REPLACE FUNCTION {{.schema}}.outboxtop_hold_bound(p_action text, p_actor text, p_events integer)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    hold_bound constant text := '5s';
    setting text;
BEGIN
    FOREACH setting IN ARRAY ARRAY['statement_timeout', 'idle_in_transaction_session_timeout'] LOOP
        IF pg_catalog.current_setting(setting)::interval = interval '0'
           OR pg_catalog.current_setting(setting)::interval > hold_bound::interval THEN
            PERFORM pg_catalog.set_config(setting, hold_bound, true);
        END IF;
    END LOOP;
    RAISE LOG 'outboxtop action % by % (database user %, pid %) on % events: audited only if its transaction commits',
        p_action, pg_catalog.quote_literal(coalesce(p_actor, '')), pg_catalog.quote_ident(session_user),
        pg_catalog.pg_backend_pid(), p_events;
END;
$$;

REVOKE ALL ON FUNCTION {{.schema}}.outboxtop_hold_bound(text, text, integer) FROM PUBLIC;
