-- Whether this role may audit the end of a backend (the operator's grant):
-- EXECUTE on function $1, outboxtop_audit_terminate.
SELECT has_function_privilege($1 || '(text, text, jsonb)', 'EXECUTE')
