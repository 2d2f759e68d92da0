-- The cutoff of a prune: $1 seconds before the database's now.
SELECT now() - make_interval(secs => $1)
