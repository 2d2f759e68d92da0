-- The valid GIN indexes of table $1 (a regclass): the ones an operator may add
-- on payload or headers, which a search inside them can use.
SELECT c.relname FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_am am ON am.oid = c.relam
WHERE i.indrelid = $1::regclass AND am.amname = 'gin' AND i.indisvalid
