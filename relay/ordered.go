package relay

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// The ordered claim is sql/claim_ordered.sql; its header says how it keeps
// order without a global lock. sql/unblock_after.sql and the sweeps
// (sql/sweep_ordered.sql, sql/sweep_unordered.sql) keep its hint, the blocked
// column (migrations/007_claim.sql), honest.

// How many blocked aggregates (ordered) or rows (unordered) one sweep statement
// reads, and how long the sweep pauses after a chunk: sweepPace times as long as
// the chunk took, so a sweep uses at most a tenth of one database backend. The
// ordered sweep is a safety net and must not take the cores the claim needs:
// beside a storm of 150,000 blocked aggregates it read them all in 3.5 s of
// database time at every relay start, and paced 4× still cost a drain 17%.
const (
	sweepChunk          = 1000
	sweepUnorderedChunk = 10000
	sweepPace           = 9
)

// claim leases up to n events with token and returns them in seq order. It runs
// under the claim's timeouts (see Config.LockTimeout): it never waits for a row
// lock (everything it locks is SKIP LOCKED), so only a table-level lock can hold
// it, and a relay frozen inside it holds the claimed aggregates for at most
// twice LockTimeout before PostgreSQL ends its session.
func (r *Relay) claim(ctx context.Context, token uuid.UUID, n int) ([]*event, error) {
	events, _, err := r.claimAgain(ctx, token, n)
	return events, err
}

// claimAgain is claim that also says whether a claim that took too little may
// find events at once: it marked rows blocked, or met a head held by another
// session, and so changed the next claim's window (a relay meeting a storm, or
// a held hot aggregate, for the first time).
func (r *Relay) claimAgain(ctx context.Context, token uuid.UUID, n int) ([]*event, bool, error) {
	tx, snap, err := r.beginClaim(ctx)
	if err != nil {
		return nil, false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	ordered := r.cfg.Ordering == OrderAggregate
	began := time.Now()
	args := r.claimArgs(token, n, began)
	var rows pgx.Rows
	if ordered {
		rows, err = tx.Query(ctx, r.sql.claimOrdered, args)
	} else {
		rows, err = tx.Query(ctx, r.sql.claimUnordered, args)
	}
	if err != nil {
		return nil, false, err
	}
	events := make([]*event, 0, n)
	var blocked int
	var unlocked []uuid.UUID
	var unlockedTypes, unlockedIDs, headTypes, headIDs []string
	var headSeqs []int64
	waiters := map[aggregateKey]int64{} // the last seq of each run with blocked rows after it
	for rows.Next() {
		e := &event{}
		// The id as *[16]byte and the summary row's NULLs as pgtype values:
		// pgx scans a uuid.UUID through its sql.Scanner (from text) and a
		// pointer through reflection, for every event.
		if !ordered {
			err = rows.Scan((*[16]byte)(&e.id), &e.seq, &e.aggregateType, &e.aggregateID, &e.eventType,
				&e.payload, &e.payloadBytes, &e.createdAt, &e.attempts, &e.topic, &e.headers)
			events = append(events, e)
		} else {
			var summary bool
			var id pgtype.UUID
			var seq pgtype.Int8
			var typ, agg, evType pgtype.Text
			var createdAt pgtype.Timestamptz
			var attempts pgtype.Int4
			var hasWaiters, corrected pgtype.Bool
			var payloadBytes pgtype.Int8
			err = rows.Scan(&summary, &id, &seq, &typ, &agg, &evType,
				&e.payload, &payloadBytes, &createdAt, &attempts, &e.topic, &e.headers, &hasWaiters,
				&e.writerXID, &e.writerSnapshot, &corrected, &blocked,
				&unlocked, &unlockedTypes, &unlockedIDs, &headTypes, &headIDs, &headSeqs)
			if err == nil && !summary {
				e.id, e.seq, e.aggregateType, e.aggregateID, e.eventType = id.Bytes, seq.Int64, typ.String, agg.String, evType.String
				e.createdAt, e.attempts, e.payloadBytes, e.corrected = createdAt.Time, int(attempts.Int32), payloadBytes.Int64, corrected.Bool
				events = append(events, e)
				if hasWaiters.Bool {
					k := aggregateKey{typ.String, agg.String}
					waiters[k] = max(waiters[k], seq.Int64)
				}
			}
		}
		if err != nil {
			rows.Close()
			return nil, false, err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	var pos claimPosition
	if err := tx.QueryRow(ctx, r.sql.claimPosition, pgx.StrictNamedArgs{
		"from_at": args["from_at"], "from_seq": args["from_seq"], "xmax": args["xmax"], "xip": args["xip"]}).
		Scan(&pos.now, &pos.firstAt, &pos.firstSeq, &pos.lateAt, &pos.lateSeq); err != nil {
		return nil, false, fmt.Errorf("reading the claim's next position: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, false, err
	}
	r.cursor.advance(pos, snap.xmax, snap.xip)
	if ordered {
		r.hints.note(headTypes, headIDs, headSeqs)
	}
	if blocked > 0 {
		r.m.Blocked.Add(float64(blocked))
	}
	again := blocked > 0
	if ordered {
		aggs := make([]aggregateKey, len(unlocked))
		for i := range aggs {
			aggs[i] = aggregateKey{unlockedTypes[i], unlockedIDs[i]}
		}
		if r.heads.observe(unlocked, aggs, began, time.Now(), r) {
			again = true
		}
		if len(waiters) > 0 {
			r.waiters.Store(token, waiters)
		}
	}
	slices.SortFunc(events, func(a, b *event) int { return cmp.Compare(a.seq, b.seq) })
	return events, again, nil
}

// claimArgs are the claim statement's parameters for a claim of n events with
// token beginning at now, in the relay's ordering mode.
func (r *Relay) claimArgs(token uuid.UUID, n int, now time.Time) pgx.StrictNamedArgs {
	fromAt, fromSeq, xmax, xip := r.cursor.position()
	args := pgx.StrictNamedArgs{"batch": n, "token": token, "lease_ms": r.cfg.Lease.Milliseconds(), "holder": r.cfg.Holder,
		"from_at": fromAt, "from_seq": fromSeq, "xmax": xmax, "xip": xip,
		"max_payload": r.cfg.MaxMessageBytes, "batch_bytes": r.cfg.BatchBytes}
	if r.cfg.Ordering == OrderAggregate {
		args["skip_types"], args["skip_ids"] = r.heads.skipped(now)
		args["hints"] = r.hints.arg()
	}
	return args
}

// begin starts a transaction under the claim's timeouts: a lock wait ends after
// LockTimeout, and PostgreSQL ends the session if this process stops inside the
// transaction for twice that. The settings go first, in their own round trip:
// parsing a statement already takes its table locks.
func (r *Relay) begin(ctx context.Context) (pgx.Tx, error) {
	tx, _, err := r.beginClaim(ctx)
	return tx, err
}

// snapshotSeen is what a claim's snapshot did not see committed: transactions
// from xmax on, and those in xip.
type snapshotSeen struct {
	xmax uint64
	xip  []uint64
}

// beginClaim is begin that also returns the snapshot of its first statement.
func (r *Relay) beginClaim(ctx context.Context) (pgx.Tx, snapshotSeen, error) {
	var snap snapshotSeen
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return nil, snap, err
	}
	ms := r.cfg.LockTimeout.Milliseconds()
	var set [5]string
	if err := tx.QueryRow(ctx, r.sql.claimTimeouts, fmt.Sprintf("%dms", ms), fmt.Sprintf("%dms", 2*ms)).
		Scan(&set[0], &set[1], &set[2], &set[3], &set[4], &snap.xmax, &snap.xip); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return nil, snap, fmt.Errorf("setting claim timeouts: %w", err)
	}
	return tx, snap, nil
}

// unblockAfter brings back the rows waiting behind the runs of the batch token,
// once its mark has committed.
func (r *Relay) unblockAfter(ctx context.Context, token uuid.UUID) error {
	v, ok := r.waiters.LoadAndDelete(token)
	if !ok {
		return nil
	}
	var types, ids []string
	var after []int64
	for k, seq := range v.(map[aggregateKey]int64) {
		types, ids, after = append(types, k.typ), append(ids, k.id), append(after, seq)
	}
	tag, err := r.pool.Exec(ctx, r.sql.unblockAfter, types, ids, r.cfg.BatchSize, after)
	if err != nil {
		return fmt.Errorf("unblocking after mark: %w", err)
	}
	if n := tag.RowsAffected(); n > 0 {
		r.m.Unblocked.Add(float64(n))
	}
	return nil
}

// sweep clears hints that lost their reason (see sql/sweep_ordered.sql); in unordered
// mode it clears them all. Each statement reads a chunk of aggregates or rows
// in its own transaction; a short chunk is the last.
func (r *Relay) sweep(ctx context.Context) (int64, error) {
	chunk := int64(sweepChunk)
	if r.cfg.Ordering != OrderAggregate {
		chunk = sweepUnorderedChunk
	}
	var total int64
	var lastType, lastID string // the ordered sweep's keyset
	for {
		var read, n int64
		start := time.Now()
		tx, err := r.begin(ctx)
		if err != nil {
			return total, err
		}
		if r.cfg.Ordering == OrderAggregate {
			err = tx.QueryRow(ctx, r.sql.sweepOrdered, lastType, lastID, chunk).Scan(&read, &n, &lastType, &lastID)
		} else {
			var tag pgconn.CommandTag
			tag, err = tx.Exec(ctx, r.sql.sweepUnordered, chunk)
			read, n = tag.RowsAffected(), tag.RowsAffected()
		}
		if err == nil {
			err = tx.Commit(ctx)
		}
		tx.Rollback(context.WithoutCancel(ctx))
		if err != nil {
			return total, err
		}
		total += n
		if read < chunk {
			return total, nil
		}
		if err := r.sweepPause(ctx, sweepPace*time.Since(start)); err != nil {
			return total, nil
		}
	}
}

// sweepPause waits d between two chunks of a sweep, or until ctx ends.
func (r *Relay) sweepPause(ctx context.Context, d time.Duration) error {
	if r.sweepPaused != nil {
		r.sweepPaused(d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// sweepLoop runs sweep every SweepInterval: the ordered sweep first one
// interval after start (a hint that outlived its reason waits that much longer;
// a restart in a storm does not begin by reading every blocked aggregate), the
// unordered one at start too, since an unordered claim takes no blocked row.
func (r *Relay) sweepLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.SweepInterval)
	defer t.Stop()
	if r.cfg.Ordering == OrderAggregate {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	for {
		if n, err := r.sweep(ctx); err != nil && ctx.Err() == nil {
			r.noteError("sweeping blocked hints", err)
		} else if n > 0 {
			r.m.Unblocked.Add(float64(n))
			r.log.Info("sweep: unblocked events whose blocker is gone", "events", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkOrder marks the claimed events whose order after the previous event of
// their aggregate is unknown (sql/order_check.sql). A batch runs it beside its
// publish, in a goroutine of its own, and its mark waits for it (the mark
// takes the events out of what the check reads); the claim loop never waits
// for it. It only informs the console and status, so a failure is logged and
// the batch goes on.
func (r *Relay) checkOrder(ctx context.Context, events []*event) {
	if len(events) == 0 {
		return
	}
	n := len(events)
	types, aggs, seqs := make([]string, n), make([]string, n), make([]int64, n)
	xids, snaps, corrected := make([]*string, n), make([]*string, n), make([]bool, n)
	for i, e := range events {
		types[i], aggs[i], seqs[i] = e.aggregateType, e.aggregateID, e.seq
		xids[i], snaps[i], corrected[i] = e.writerXID, e.writerSnapshot, e.corrected
	}
	// One round trip: a batch's statements run in one implicit transaction,
	// so the lock timeout set first bounds the check's row locks.
	b := &pgx.Batch{}
	b.Queue("SELECT pg_catalog.set_config('lock_timeout', $1, true)", fmt.Sprintf("%dms", r.cfg.LockTimeout.Milliseconds()))
	b.Queue(r.sql.orderCheck, types, aggs, seqs, xids, snaps, corrected)
	br := r.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		var tag pgconn.CommandTag
		if tag, err = br.Exec(); err == nil {
			r.m.OrderUnknown.Add(float64(tag.RowsAffected()))
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil && ctx.Err() == nil {
		r.log.Warn("checking the commit order of a claimed batch (nothing is lost; the console may not count its aggregates as of unknown order)", "err", err)
	}
}
