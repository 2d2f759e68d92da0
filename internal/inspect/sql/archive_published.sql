-- Archive up to $2 events published more than $1 ago; the rows moved.
SELECT {{.schema}}.outboxtop_archive_published($1::interval, $2)
