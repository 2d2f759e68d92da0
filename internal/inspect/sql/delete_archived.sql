-- Delete up to $2 events archived more than $1 ago (skipped ones are kept);
-- the rows deleted.
SELECT {{.schema}}.outboxtop_delete_archived($1::interval, $2)
