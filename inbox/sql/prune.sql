-- Deletes up to $3 rows of consumer $1 consumed before $2, through the
-- schema's function: consumer roles have no DELETE on the table (with it they
-- could lock every other consumer's inserts out). The rows deleted.
SELECT {{.schema}}.outboxtop_inbox_prune($1, $2, $3)
