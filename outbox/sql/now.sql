-- The database's time, for a batch that mixes delayed and immediate events.
SELECT now()
