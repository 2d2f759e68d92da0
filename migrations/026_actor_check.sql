-- The audit function's actor check (functions/outboxtop_audit_write.sql)
-- refuses every code point internal/ident takes out of a name: the musical
-- symbol and shorthand format controls, the Egyptian hieroglyph format
-- controls and the variation selectors supplement passed it and named no one.
-- Nothing in the tables changes; the version moves so that an older
-- outboxtop, which would put back the narrower check, refuses the schema.
SELECT 1;
