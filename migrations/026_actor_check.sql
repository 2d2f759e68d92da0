-- The functions' actor check (functions/outboxtop_actor_check.sql) refuses
-- every code point internal/ident takes out of a name: the musical symbol and
-- shorthand format controls, the Egyptian hieroglyph format controls and the
-- variation selectors supplement passed it and named no one. The audit
-- function calls it, and terminate-backend before it signals (refused after,
-- it had ended the backend with no audit row). Nothing in the tables changes;
-- the version moves so that an older outboxtop, which would put back the
-- narrower check, refuses the schema.
SELECT 1;
