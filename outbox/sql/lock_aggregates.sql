-- The order locks of a batch's aggregates, in the canonical order, before the
-- batch is copied in: $1 aggregate types and $2 aggregate ids, one entry per
-- event (nothing happens unless the commit order is enforced).
SELECT {{.schema}}.outbox_lock_aggregates($1::text[], $2::text[])
