package relay

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// published is one acknowledged event.
type published struct {
	id        uuid.UUID
	topic     string
	partition int32
	offset    int64
}

// markResult is what mark did: rows marked published, and rows left parked
// because an operator parked them while they were in flight. The rest of the
// acknowledged events lost their lease.
type markResult struct{ marked, parked int }

// mark records acknowledged events, fenced by token (sql/mark.sql).
func (r *Relay) mark(ctx context.Context, token uuid.UUID, acked []published) (markResult, error) {
	var res markResult
	if len(acked) == 0 {
		return res, nil
	}
	// [16]byte, not uuid.UUID: pgx encodes a uuid.UUID through its
	// driver.Valuer, as text to be parsed again (15% of a relay's CPU).
	ids := make([][16]byte, len(acked))
	topics := make([]string, len(acked))
	parts := make([]int32, len(acked))
	offs := make([]int64, len(acked))
	for i, a := range acked {
		ids[i], topics[i], parts[i], offs[i] = a.id, a.topic, a.partition, a.offset
	}
	rows, err := r.pool.Query(ctx, r.sql.mark, pgx.StrictNamedArgs{
		"token": token, "ids": ids, "topics": topics, "partitions": parts, "offsets": offs})
	if err != nil {
		return res, err
	}
	parked, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil {
		return res, err
	}
	for _, p := range parked {
		if p {
			res.parked++
		} else {
			res.marked++
		}
	}
	if err := r.unblockAfter(ctx, token); err != nil {
		// The mark stands; the sweep brings the waiting rows back later.
		r.noteError("unblocking after mark", err)
	}
	return res, nil
}

// settlement is what happens to an event that was not published.
type settlement struct {
	id     uuid.UUID
	delay  time.Duration
	dead   bool
	refund bool
	err    *string
	// For the attempt history: the attempt it was, what went wrong (empty: it
	// was not tried, and has no history row) and Kafka's error code (0: none).
	attempt int
	class   string
	code    int16
}

// settle ends the lease of events that were not published, fenced by token
// (sql/settle.sql), and returns how many rows it changed.
func (r *Relay) settle(ctx context.Context, token uuid.UUID, s []settlement) (int, error) {
	if len(s) == 0 {
		return 0, nil
	}
	ids := make([][16]byte, len(s)) // as in mark
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
	tag, err := r.pool.Exec(ctx, r.sql.settle, pgx.StrictNamedArgs{
		"token": token, "ids": ids, "delays_ms": delays, "dead": dead, "refunds": refund, "errors": errs})
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// renew extends the lease of the batch token (sql/renew.sql) and returns how
// many rows it renewed.
func (r *Relay) renew(ctx context.Context, token uuid.UUID) (int, error) {
	tag, err := r.pool.Exec(ctx, r.sql.renew, token, r.cfg.Lease.Milliseconds())
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// nextScheduledSettings are nextScheduled's transaction's.
const nextScheduledSettings = "SET LOCAL enable_sort = off"

// nextScheduled is when the earliest scheduled event becomes ready, or zero
// (sql/next_scheduled.sql). Sorting is off for it, as in the claim's
// transaction: the planner believes every partial index of unpublished rows
// nearly empty, and otherwise reads outbox_claim_seq_idx in full and sorts
// rather than seek outbox_claim_idx (behind a held horizon, 1–3 s a call after
// 15 minutes, in the horizon profile).
func (r *Relay) nextScheduled(ctx context.Context) (time.Time, error) {
	var t *time.Time
	if err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, nextScheduledSettings); err != nil {
			return err
		}
		return tx.QueryRow(ctx, r.sql.nextScheduled).Scan(&t)
	}); err != nil {
		return time.Time{}, err
	}
	if t == nil {
		return time.Time{}, nil
	}
	return *t, nil
}
