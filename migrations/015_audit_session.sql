-- db_session: the database session (backend pid and start time) that wrote an
-- audit row. Archive goes in batches, one transaction each, and its later
-- batches add their rows to the first one's audit row; only the session that
-- wrote the row may (functions/outboxtop_archive.sql). Matching the actor and
-- the database login was not enough: any call naming the same actor, from any
-- session of that login, could add to any earlier archive's row, which kept its
-- old time. NULL on rows written before this migration and by the other
-- actions: nothing may add to those.
ALTER TABLE {{.schema}}.outbox_audit ADD COLUMN IF NOT EXISTS db_session text;
