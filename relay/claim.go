package relay

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// statements are the relay's SQL for one schema.
type statements struct {
	claimOrdered   string
	claimUnordered string
	mark           string
	settle         string
	renew          string
	nextScheduled  string
	drainState     string
	release        string
	claimLock      int64
}

func newStatements(schema string) statements {
	t := pgx.Identifier{schema, "outbox_event"}.Sanitize()
	q := func(s string) string { return strings.ReplaceAll(s, "outbox_event", t) }
	const returning = `RETURNING e.event_id, e.seq, e.aggregate_type, e.aggregate_id, e.event_type,
	e.payload, e.created_at, e.attempts, e.topic, e.headers`
	h := fnv.New64a()
	h.Write([]byte("outboxtop.claim." + schema))
	return statements{
		// Blockers: failed and scheduled events; an aggregate with one of them before
		// a candidate waits. In-flight batches block through the head check: the
		// first unpublished event of the aggregate holds a live lease.
		claimOrdered: q(`
WITH blockers AS MATERIALIZED (
    SELECT aggregate_type, aggregate_id, min(seq) AS seq
    FROM (
        SELECT aggregate_type, aggregate_id, seq FROM outbox_event
        WHERE published_at IS NULL AND failed_at IS NOT NULL
        UNION ALL
        SELECT aggregate_type, aggregate_id, seq FROM outbox_event
        WHERE published_at IS NULL AND failed_at IS NULL AND available_at > now()
    ) b
    GROUP BY aggregate_type, aggregate_id
), picked AS (
    SELECT c.event_id
    FROM outbox_event c
    WHERE c.published_at IS NULL AND c.failed_at IS NULL
      AND c.available_at <= now()
      AND (c.lease_until IS NULL OR c.lease_until <= now())
      AND NOT EXISTS (
          SELECT 1 FROM blockers b
          WHERE b.aggregate_type = c.aggregate_type AND b.aggregate_id = c.aggregate_id AND b.seq < c.seq)
      AND NOT EXISTS (
          SELECT 1 FROM (
              SELECT h.lease_until FROM outbox_event h
              WHERE h.aggregate_type = c.aggregate_type AND h.aggregate_id = c.aggregate_id
                AND h.published_at IS NULL
              ORDER BY h.seq LIMIT 1) head
          WHERE head.lease_until > now())
    ORDER BY c.seq
    LIMIT $1
    FOR UPDATE OF c SKIP LOCKED
)
UPDATE outbox_event AS e
SET lease_token = $2, lease_until = now() + $3::float8 * interval '1 millisecond', attempts = e.attempts + 1
FROM picked
WHERE e.event_id = picked.event_id
` + returning),
		// The seed's claim, less failed rows.
		claimUnordered: q(`
WITH picked AS (
    SELECT event_id FROM outbox_event
    WHERE published_at IS NULL AND failed_at IS NULL
      AND available_at <= now()
      AND (lease_until IS NULL OR lease_until <= now())
    ORDER BY available_at, created_at, event_id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox_event AS e
SET lease_token = $2, lease_until = now() + $3::float8 * interval '1 millisecond', attempts = e.attempts + 1
FROM picked
WHERE e.event_id = picked.event_id
` + returning),
		mark: q(`
UPDATE outbox_event AS e
SET published_at = now(), lease_until = NULL,
    kafka_topic = m.topic, kafka_partition = m.part, kafka_offset = m.off
FROM unnest($2::uuid[], $3::text[], $4::int[], $5::bigint[]) AS m(id, topic, part, off)
WHERE e.event_id = m.id AND e.lease_token = $1 AND e.published_at IS NULL`),
		// settle ends a lease without publishing: scheduled again after delay_ms (0:
		// ready now), attempts reduced by refund, failed when dead. A NULL error keeps
		// the previous last_error.
		settle: q(`
UPDATE outbox_event AS e
SET lease_token = NULL, lease_until = NULL,
    available_at = CASE WHEN f.dead THEN e.available_at ELSE now() + f.delay_ms::float8 * interval '1 millisecond' END,
    attempts = greatest(e.attempts - f.refund, 0),
    last_error = coalesce(f.err, e.last_error),
    failed_at = CASE WHEN f.dead THEN now() END
FROM unnest($2::uuid[], $3::bigint[], $4::bool[], $5::int[], $6::text[]) AS f(id, delay_ms, dead, refund, err)
WHERE e.event_id = f.id AND e.lease_token = $1 AND e.published_at IS NULL`),
		renew: q(`
UPDATE outbox_event SET lease_until = now() + $2::float8 * interval '1 millisecond'
WHERE lease_token = $1 AND published_at IS NULL`),
		nextScheduled: q(`
SELECT min(available_at) FROM outbox_event
WHERE published_at IS NULL AND failed_at IS NULL AND available_at > now()`),
		// drainState: is any batch in flight anywhere, when is the next scheduled
		// event due, how many events wait, and how many of those wait behind no
		// failed event of their aggregate (those are publishable, now or soon).
		drainState: q(`
SELECT
    EXISTS (SELECT 1 FROM outbox_event WHERE published_at IS NULL AND failed_at IS NULL AND lease_until > now()),
    (SELECT min(available_at) FROM outbox_event WHERE published_at IS NULL AND failed_at IS NULL AND available_at > now()),
    (SELECT count(*) FROM outbox_event WHERE published_at IS NULL AND failed_at IS NULL),
    (SELECT count(*) FROM outbox_event e WHERE e.published_at IS NULL AND e.failed_at IS NULL
        AND NOT EXISTS (SELECT 1 FROM outbox_event f
            WHERE f.published_at IS NULL AND f.failed_at IS NOT NULL
              AND f.aggregate_type = e.aggregate_type AND f.aggregate_id = e.aggregate_id AND f.seq < e.seq))`),
		// release gives a whole batch back, its attempt refunded (shutdown timeout).
		release: q(`
UPDATE outbox_event SET lease_token = NULL, lease_until = NULL, attempts = greatest(attempts - 1, 0)
WHERE lease_token = $1 AND published_at IS NULL`),
		claimLock: int64(h.Sum64()),
	}
}

// claim leases up to n events with token and returns them in seq order.
func (r *Relay) claim(ctx context.Context, token uuid.UUID, n int) ([]*event, error) {
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	sql := r.sql.claimUnordered
	if r.cfg.Ordering == OrderAggregate {
		// Serialize ordered claims: a separate statement, so the claim's snapshot
		// is taken after the previous claimer committed its leases.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", r.sql.claimLock); err != nil {
			return nil, fmt.Errorf("taking claim lock: %w", err)
		}
		sql = r.sql.claimOrdered
	}
	rows, err := tx.Query(ctx, sql, n, token, r.cfg.Lease.Milliseconds())
	if err != nil {
		return nil, err
	}
	events := make([]*event, 0, n)
	for rows.Next() {
		e := &event{}
		if err := rows.Scan(&e.id, &e.seq, &e.aggregateType, &e.aggregateID, &e.eventType,
			&e.payload, &e.createdAt, &e.attempts, &e.topic, &e.headers); err != nil {
			rows.Close()
			return nil, err
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	sortBySeq(events)
	return events, nil
}

func sortBySeq(events []*event) {
	// Insertion sort on an almost-sorted slice is linear.
	for i := 1; i < len(events); i++ {
		for j := i; j > 0 && events[j].seq < events[j-1].seq; j-- {
			events[j], events[j-1] = events[j-1], events[j]
		}
	}
}

// published is one acknowledged event.
type published struct {
	id        uuid.UUID
	topic     string
	partition int32
	offset    int64
}

// mark records acknowledged events and returns how many rows were still fenced by
// token (the rest lost their lease).
func (r *Relay) mark(ctx context.Context, token uuid.UUID, acked []published) (int, error) {
	if len(acked) == 0 {
		return 0, nil
	}
	ids := make([]uuid.UUID, len(acked))
	topics := make([]string, len(acked))
	parts := make([]int32, len(acked))
	offs := make([]int64, len(acked))
	for i, a := range acked {
		ids[i], topics[i], parts[i], offs[i] = a.id, a.topic, a.partition, a.offset
	}
	tag, err := r.pool.Exec(ctx, r.sql.mark, token, ids, topics, parts, offs)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// settlement is what happens to an event that was not published.
type settlement struct {
	id     uuid.UUID
	delay  time.Duration
	dead   bool
	refund bool
	err    *string
}

func (r *Relay) settle(ctx context.Context, token uuid.UUID, s []settlement) (int, error) {
	if len(s) == 0 {
		return 0, nil
	}
	ids := make([]uuid.UUID, len(s))
	delays := make([]int64, len(s))
	dead := make([]bool, len(s))
	refund := make([]int32, len(s))
	errs := make([]*string, len(s))
	for i, x := range s {
		ids[i], delays[i], dead[i], errs[i] = x.id, x.delay.Milliseconds(), x.dead, x.err
		if x.refund {
			refund[i] = 1
		}
	}
	tag, err := r.pool.Exec(ctx, r.sql.settle, token, ids, delays, dead, refund, errs)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

func (r *Relay) renew(ctx context.Context, token uuid.UUID) (int, error) {
	tag, err := r.pool.Exec(ctx, r.sql.renew, token, r.cfg.Lease.Milliseconds())
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// nextScheduled is when the earliest scheduled event becomes ready, or zero.
func (r *Relay) nextScheduled(ctx context.Context) (time.Time, error) {
	var t *time.Time
	if err := r.pool.QueryRow(ctx, r.sql.nextScheduled).Scan(&t); err != nil {
		return time.Time{}, err
	}
	if t == nil {
		return time.Time{}, nil
	}
	return *t, nil
}
