package relay

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Attempt history. Every try of an event that did not end published leaves a
// row in outbox_attempt (sql/attempt_history.sql): when, this relay's holder
// name, the attempt it was, what went wrong (the decision's class and the
// error text, with Kafka's error code when it gave one) and what the relay did
// about it, with the backoff it chose. The row is written after the batch's
// settle, by a statement of its own, only when the batch has such an event: a
// batch published whole writes nothing, and the claim and the mark are
// unchanged. A history row that cannot be written (the role's grants predate
// the table, a database error) is logged, at most every historyWarnEvery, is
// not tried again, and never holds up or undoes the settle: the events' rows
// are what delivery depends on; the history only explains them.

// historyWarnEvery spaces out the warning that history rows were not written.
const historyWarnEvery = time.Minute

// outcomes name what the relay did with a try, as outbox_attempt.outcome.
func (s settlement) outcome() string {
	switch {
	case s.dead:
		return "fail"
	case !s.refund:
		return "schedule"
	case s.delay > 0:
		return "wait"
	}
	return "release"
}

// writeHistory adds the history rows of a settled batch's tried events.
func (r *Relay) writeHistory(ctx context.Context, settles []settlement) {
	var ids [][16]byte
	var attempts []int32
	var classes, outcomes []string
	var errs []*string
	var codes []*int16
	var backoffs []*int64
	for _, s := range settles {
		if s.class == "" {
			continue
		}
		ids = append(ids, s.id)
		attempts = append(attempts, int32(s.attempt))
		classes = append(classes, s.class)
		outcomes = append(outcomes, s.outcome())
		errs = append(errs, s.err)
		var code *int16
		if s.code != 0 {
			code = &s.code
		}
		codes = append(codes, code)
		var ms *int64
		if !s.dead && s.delay > 0 {
			ms = new(s.delay.Milliseconds())
		}
		backoffs = append(backoffs, ms)
	}
	if len(ids) == 0 {
		return
	}
	// Tried once: a row that could not be written is logged, never retried
	// at the batch loop's expense (a refused grant would be refused again).
	_, err := r.pool.Exec(ctx, r.sql.attemptHistory, pgx.StrictNamedArgs{"holder": r.cfg.Holder,
		"ids": ids, "attempts": attempts, "classes": classes, "outcomes": outcomes, "errors": errs,
		"codes": codes, "backoffs_ms": backoffs})
	if err == nil || ctx.Err() != nil {
		return
	}
	now := time.Now().UnixNano()
	last := r.historyWarned.Load()
	if last != 0 && time.Duration(now-last) < historyWarnEvery || !r.historyWarned.CompareAndSwap(last, now) {
		return
	}
	what := "attempt history not written (the events were settled)"
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42501" || pgErr.Code == "42P01") {
		what = "attempt history refused: run `outboxtop migrate` and apply `outboxtop grants --role relay` (the events were settled)"
	}
	r.log.Warn(what, "events", len(ids), "err", err)
}
