package wire

// OrderLockRows is how many events one transaction may insert, while the
// commit order is enforced or detected, before it takes the table's order
// lock instead of one lock per aggregate: PostgreSQL's lock table holds about
// max_locks_per_transaction (64 by default) locks per connection, and a COPY
// of a million aggregates must not fill it. A writer that will insert more
// takes the table's lock first (package outbox's AddMany does, through the
// schema's outbox_lock_aggregates function) so that it never has to upgrade
// a lock mid-transaction.
const OrderLockRows = 64
