-- The events ever inserted: the last value of the identity behind seq of $1
-- (NULL without the privilege to read it, or before the first insert; no row
-- when seq has no identity).
SELECT last_value FROM pg_sequences
WHERE (schemaname, sequencename) = (SELECT n.nspname, c.relname FROM pg_class c
	JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE c.oid = pg_get_serial_sequence($1, 'seq')::regclass)
