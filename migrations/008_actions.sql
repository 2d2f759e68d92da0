-- Operator actions through the database's own door. Each action is a function that
-- runs as the schema's owner (SECURITY DEFINER: the role that migrates), re-checks
-- the state of every event it is given, changes only those rows and writes exactly
-- one outbox_audit row in the same transaction. Operators get EXECUTE on these
-- functions and no write privilege on outbox_event, the archive or the audit trail,
-- so no action can happen unaudited and no row can be forged through them: every
-- value they write is computed here, only the actor, reason and the event ids come
-- from the caller. Audit ids and times come only from the column defaults.
--
-- The functions themselves are in functions/ (one file each, applied by every
-- migrate after the numbered migrations); this migration holds what they need of
-- the tables.

-- The relay's hint (migration 007): an event known to wait behind an
-- earlier unpublished event of its aggregate. Added here too so skip can clear it
-- whichever of the two migrations a database has; IF NOT EXISTS makes the second a
-- no-op.
ALTER TABLE {{.schema}}.outbox_event
    ADD COLUMN IF NOT EXISTS blocked boolean NOT NULL DEFAULT false;

-- The database login that performed an action, from the session: unlike the actor
-- (the person, as the application names them) a caller cannot choose it.
ALTER TABLE {{.schema}}.outbox_audit ADD COLUMN IF NOT EXISTS db_user text;
ALTER TABLE {{.schema}}.outbox_audit ALTER COLUMN db_user SET DEFAULT session_user;

-- An inbox row belongs to the consumer that wrote it. A role sees and changes only
-- the rows whose consumer_name is its own name (current_user), so one consumer
-- cannot read or delete another's; roles that may read the audit trail (console,
-- operator) read every inbox row for the Consumers panel. The table's owner (the
-- migrating role, which the examples and the demo use) is not subject to it.
--
-- Only on an inbox outboxtop created. One the application had before (002
-- adopted it and said so in the comment on consumed_at, or, before, on
-- consumed_event_consumed_at_idx)
-- keeps the row security the application gave it: its consumers may record
-- names other than their roles' (role billing_svc, consumer billing), and a
-- policy keyed on current_user would refuse their every insert and hide their
-- rows. An operator who wants the policies there creates them with these
-- statements (docs/schema.md).
DO $inbox$
BEGIN
    IF coalesce(col_description('{{.schema}}.consumed_event'::regclass,
                    (SELECT attnum FROM pg_attribute WHERE attrelid = '{{.schema}}.consumed_event'::regclass
                     AND attname = 'consumed_at')::integer), '') LIKE 'outboxtop: adopted:%'
       OR coalesce(obj_description(to_regclass('{{.schema}}.consumed_event_consumed_at_idx'), 'pg_class'), '')
            LIKE 'outboxtop: adopted:%' THEN
        RETURN;
    END IF;
    ALTER TABLE {{.schema}}.consumed_event ENABLE ROW LEVEL SECURITY;
    DROP POLICY IF EXISTS outboxtop_inbox_own ON {{.schema}}.consumed_event;
    CREATE POLICY outboxtop_inbox_own ON {{.schema}}.consumed_event
        USING (consumer_name = current_user)
        WITH CHECK (consumer_name = current_user);
    DROP POLICY IF EXISTS outboxtop_inbox_read ON {{.schema}}.consumed_event;
    CREATE POLICY outboxtop_inbox_read ON {{.schema}}.consumed_event FOR SELECT
        -- A sub-select: evaluated once per query (an InitPlan), not once per row.
        USING ((SELECT has_table_privilege(current_user, '{{.schema}}.outbox_audit', 'SELECT')));
END
$inbox$;
