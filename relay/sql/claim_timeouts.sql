-- The claim transaction's timeouts, its first statement: a lock wait ends
-- after $1, and PostgreSQL ends the session if the relay stops inside the
-- transaction for $2 (both like '500ms'). They go in their own round trip:
-- parsing a statement already takes its table locks.
SELECT set_config('lock_timeout', $1, true), set_config('idle_in_transaction_session_timeout', $2, true)
