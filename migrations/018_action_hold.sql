-- The actions bound what their caller's transaction may do after them and log
-- each call (functions/outboxtop_hold_bound.sql), and lock only the events in
-- their states. Nothing in the tables changes; the version moves so that an
-- older outboxtop, which would put back the unbounded functions, refuses the
-- schema.
SELECT 1;
