package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// Tests of the claim in an incident: trouble on some aggregates, sessions that
// hold locks, hints that outlive their reason.

// checkOrder consumes want records and fails on a first delivery out of seq
// order within its aggregate, or on a missing event.
func (b *bundle) checkOrder(t *testing.T, want int) {
	t.Helper()
	recs := b.delivered(t, want, b.topic)
	ids := b.seqs(t)
	seen := map[string]bool{}
	last := map[string]int64{}
	for _, rec := range recs {
		id := header(rec, "event_id")
		if seen[id] {
			continue
		}
		seen[id] = true
		ev := ids[id]
		if prev, ok := last[ev.agg]; ok && ev.seq < prev {
			t.Fatalf("aggregate %s: seq %d delivered after %d", ev.agg, ev.seq, prev)
		}
		last[ev.agg] = ev.seq
	}
	if len(seen) != want {
		t.Fatalf("distinct delivered %d, want %d", len(seen), want)
	}
}

func (b *bundle) exec(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	tag, err := b.pool.Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	return tag.RowsAffected()
}

// Events waiting behind a failed or a scheduled event of their aggregate leave
// the claim window (blocked) while other aggregates flow, and come back in
// order when their blocker is retried or comes due.
func TestWaitingEventsLeaveTheWindowAndComeBackInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insertSeed(t, 6, 1, "dead-")
	b.insertSeed(t, 4, 1, "later-")
	b.insertSeed(t, 200, 10, "ok-")
	b.exec(t, `UPDATE outbox_event SET failed_at = now(), last_error = 'test: dead'
		WHERE seq = (SELECT min(seq) FROM outbox_event WHERE aggregate_id = 'dead-0')`)
	b.exec(t, `UPDATE outbox_event SET available_at = now() + interval '1 hour'
		WHERE seq = (SELECT min(seq) FROM outbox_event WHERE aggregate_id = 'later-0')`)
	r := b.relay(t, b.config())
	start(t, r)
	testenv.WaitFor(t, time.Minute, "healthy aggregates published", func() bool {
		return b.count(t, "published_at IS NOT NULL AND aggregate_id LIKE 'ok-%'") == 200
	})
	testenv.WaitFor(t, 10*time.Second, "waiting events blocked", func() bool {
		return b.count(t, "blocked") == 5+3
	})
	if n := b.count(t, "published_at IS NOT NULL AND aggregate_id NOT LIKE 'ok-%'"); n != 0 {
		t.Fatalf("%d events published past their blocker", n)
	}
	if got := testutil.ToFloat64(r.m.Blocked); got != 8 {
		t.Errorf("blocked_total %v, want 8", got)
	}
	// The operator retries the dead head; the scheduled one comes due.
	b.exec(t, `UPDATE outbox_event SET failed_at = NULL, attempts = 0, available_at = now() WHERE failed_at IS NOT NULL`)
	b.exec(t, `UPDATE outbox_event SET available_at = now() WHERE available_at > now()`)
	testenv.WaitFor(t, time.Minute, "all published", func() bool {
		return b.count(t, "published_at IS NOT NULL") == 210
	})
	if n := b.count(t, "blocked"); n != 0 {
		t.Fatalf("%d events still blocked", n)
	}
	b.checkOrder(t, 210)
}

// A hot aggregate with far more events than a batch, claimed by two relays with
// several batches in flight: its rows behind a run in flight are skipped, not
// claimed, and order holds.
func TestHotAggregateBehindItsOwnRunsKeepsOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', CASE WHEN g % 2 = 0 THEN 'hot' ELSE 'o-' || (g % 300) END, 'E', jsonb_build_object('n', g)
		FROM generate_series(1, 6000) g ORDER BY g`)
	for i := 0; i < 2; i++ {
		cfg := b.config()
		cfg.BatchSize, cfg.InFlight = 100, 4
		start(t, b.relay(t, cfg))
	}
	testenv.WaitFor(t, 2*time.Minute, "all published", func() bool { return b.count(t, "published_at IS NOT NULL") == 6000 })
	b.checkOrder(t, 6000)
}

// A hint whose blocker vanished (deleted by hand) is cleared by the sweep.
func TestSweepClearsOrphanedHints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config()
	cfg.SweepInterval = time.Second
	start(t, b.relay(t, cfg))
	b.insertSeed(t, 5, 1, "orphan-")
	b.exec(t, `UPDATE outbox_event SET blocked = true`)
	testenv.WaitFor(t, 30*time.Second, "orphaned events published", func() bool {
		return b.count(t, "published_at IS NOT NULL") == 5
	})
	b.checkOrder(t, 5)
}

// The sweep reads blocked aggregates in chunks (keyset): every orphaned head of
// more aggregates than a chunk is unblocked in one sweep, and a row behind an
// unpublished one stays blocked — untouched: the sweep locks only what it
// unblocks (locking every blocked row it read would write each of them once
// more, 150,000 in a storm, every sweep).
func TestSweepWalksEveryChunk(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const aggs = 2*sweepChunk + 500
	b.exec(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, blocked)
		SELECT gen_random_uuid(), 'order', 'a-' || (g % $1), 'E', '{}', g >= $1
		FROM generate_series(0, 2 * $1 - 1) g ORDER BY g`, aggs)
	b.exec(t, `UPDATE outbox_event SET blocked = true WHERE NOT blocked AND aggregate_id < 'a-5'`)
	r := b.relay(t, b.config())
	var pauses []time.Duration
	r.sweepPaused = func(d time.Duration) { pauses = append(pauses, d) }
	n, err := r.sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Paced: a pause after each full chunk (the short third chunk is the last).
	if len(pauses) != 2 || slices.Min(pauses) <= 0 {
		t.Errorf("sweep of 3 chunks paused %v, want 2 pauses of sweepPace × the chunk's time", pauses)
	}
	orphans := b.count(t, "aggregate_id < 'a-5' AND seq IN (SELECT min(seq) FROM outbox_event GROUP BY aggregate_id)")
	if n != int64(orphans) || b.count(t, "blocked") != aggs {
		t.Fatalf("sweep unblocked %d (want the %d orphaned heads); %d rows blocked, want %d", n, orphans, b.count(t, "blocked"), aggs)
	}
	if locked := b.count(t, "blocked AND xmax::text <> '0'"); locked != 0 {
		t.Errorf("the sweep locked %d rows it left blocked", locked)
	}
}

// Without ordering nothing waits: an unordered relay clears hints an ordered one
// left and publishes those rows.
func TestUnorderedRelayClearsHints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insertSeed(t, 50, 5, "u-")
	b.exec(t, `UPDATE outbox_event SET blocked = true WHERE seq % 2 = 0`)
	cfg := b.config()
	cfg.Ordering, cfg.Drain = OrderNone, true
	if err := b.relay(t, cfg).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, "published_at IS NULL"); n != 0 {
		t.Fatalf("%d events left unpublished", n)
	}
}

// frozenClaim runs r's ordered claim in a transaction that it never commits: a
// relay frozen (SIGSTOP, a partition) right after its claim statement, holding
// the claimed rows locked. idle bounds its idle transaction (0: the relay's own
// setting, twice the lock timeout). It returns the aggregates it holds and its
// backend pid.
func frozenClaim(t *testing.T, b *bundle, r *Relay, n int, idle time.Duration) (aggs map[string]bool, pid int32, tx pgx.Tx) {
	t.Helper()
	ctx := context.Background()
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Conn().Close(context.Background()); conn.Release() })
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if idle == 0 {
		idle = 2 * r.cfg.LockTimeout
	}
	if _, err := tx.Exec(ctx, "SELECT set_config('idle_in_transaction_session_timeout', $1, true)", fmt.Sprintf("%dms", idle.Milliseconds())); err != nil {
		t.Fatal(err)
	}
	args := r.claimArgs(uuid.New(), n, time.Now())
	rows, err := tx.Query(ctx, r.sql.claimOrdered, args)
	if err != nil {
		t.Fatal(err)
	}
	aggs = map[string]bool{}
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		if summary := v[0].(bool); !summary {
			aggs[v[4].(string)] = true
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(aggs) == 0 {
		t.Fatal("the frozen claim claimed nothing")
	}
	return aggs, pid, tx
}

// A relay frozen inside its claim holds only the aggregates it claimed: another
// relay publishes everything else at once, reports the held heads, and
// publishes the rest in order once the frozen session lets go.
func TestFrozenClaimHoldsOnlyItsAggregates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insertSeed(t, 2000, 100, "o-")
	cfg := b.config()
	cfg.LockTimeout = 200 * time.Millisecond
	frozen := b.relay(t, cfg)
	held, _, tx := frozenClaim(t, b, frozen, 100, time.Hour)
	heldEvents := 0
	for agg := range held {
		heldEvents += b.count(t, "aggregate_id = '"+agg+"'")
	}
	r := b.relay(t, cfg)
	start(t, r)
	testenv.WaitFor(t, time.Minute, "every aggregate but the frozen relay's published", func() bool {
		return b.count(t, "published_at IS NOT NULL") == 2000-heldEvents
	})
	testenv.WaitFor(t, 10*time.Second, "held heads reported", func() bool { return r.Status().HeadsLocked == len(held) })
	if got := testutil.ToFloat64(r.m.HeadsLocked); got != float64(len(held)) {
		t.Errorf("heads_locked gauge %v, want %d", got, len(held))
	}
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, time.Minute, "all published", func() bool { return b.count(t, "published_at IS NOT NULL") == 2000 })
	testenv.WaitFor(t, 10*time.Second, "report cleared", func() bool { return r.Status().HeadsLocked == 0 })
	b.checkOrder(t, 2000)
}

// The frozen claimer's own timeouts end it: PostgreSQL closes a session idle
// inside a claim transaction after twice the lock timeout, and its aggregates
// flow again without anyone's help.
func TestFrozenClaimIsEndedWithinTwiceTheLockTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insertSeed(t, 500, 20, "o-")
	cfg := b.config()
	cfg.LockTimeout = 300 * time.Millisecond
	_, pid, _ := frozenClaim(t, b, b.relay(t, cfg), 50, 0)
	began := time.Now()
	testenv.WaitFor(t, 30*time.Second, "frozen session ended by the server", func() bool { return !b.backendAlive(t, pid) })
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("frozen session lived %v, want about %v", took, 2*cfg.LockTimeout)
	}
	start(t, b.relay(t, cfg))
	testenv.WaitFor(t, time.Minute, "all published", func() bool { return b.count(t, "published_at IS NOT NULL") == 500 })
	b.checkOrder(t, 500)
}

// A session holding a table lock the claim needs makes the claim fail after the
// lock timeout with an error that says so, instead of hanging silently; the
// relay publishes as soon as the lock goes.
func TestTableLockIsReportedNotWaitedOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insertSeed(t, 100, 10, "o-")
	ctx := context.Background()
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "LOCK TABLE outbox_event IN SHARE ROW EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	cfg := b.config()
	cfg.LockTimeout = 200 * time.Millisecond
	r := b.relay(t, cfg)
	start(t, r)
	testenv.WaitFor(t, 60*time.Second, "lock timeout reported", func() bool {
		return strings.Contains(r.Status().LastError, "lock timeout")
	})
	if n := b.count(t, "published_at IS NOT NULL"); n != 0 {
		t.Fatalf("%d published under the lock", n)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, time.Minute, "all published", func() bool { return b.count(t, "published_at IS NOT NULL") == 100 })
}

// A claim takes at most the batch size, and for every aggregate a prefix of its
// unpublished events in seq order: the head first, no gaps.
func TestClaimTakesPrefixesWithinTheBatchSize(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insertSeed(t, 300, 3, "p-")
	r := b.relay(t, b.config())
	ctx := context.Background()
	claimed := map[string][]int64{}
	for i := 0; i < 50; i++ {
		tok := uuid.New()
		events, err := r.claim(ctx, tok, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) == 0 {
			break
		}
		if len(events) > 7 {
			t.Fatalf("claimed %d events with a batch size of 7", len(events))
		}
		for _, e := range events {
			claimed[e.aggregateID] = append(claimed[e.aggregateID], e.seq)
		}
		// Publish in claim order so the next claim moves on.
		acked := make([]published, len(events))
		for j, e := range events {
			acked[j] = published{e.id, "t", 0, int64(j)}
		}
		if _, err := r.mark(ctx, tok, acked); err != nil {
			t.Fatal(err)
		}
	}
	var want int64
	for agg, seqs := range claimed {
		if len(seqs) != 100 {
			t.Errorf("aggregate %s: %d of 100 claimed", agg, len(seqs))
		}
		for i := 1; i < len(seqs); i++ {
			if seqs[i] <= seqs[i-1] {
				t.Fatalf("aggregate %s claimed out of order: %v", agg, seqs)
			}
		}
		want += 100
	}
	if want != 300 {
		t.Fatalf("claimed %d events, want 300", want)
	}
}

// A relay meeting a storm for the first time: more waiting rows than a batch,
// older than the healthy ones, fill its first windows. A claim that took nothing
// but marked rows blocked claims again at once instead of waiting out the poll
// interval, so the healthy events behind them are not held for
// (waiting rows / batch size) × PollInterval.
func TestFirstClaimsOverAStormDoNotWaitBetweenThemselves(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, failed_at, last_error)
		SELECT gen_random_uuid(), 'payment', 'f-' || g, 'E', '{}', now() - interval '2 hours', now() - interval '2 hours', now(), 'test: dead'
		FROM generate_series(1, 300) g`)
	b.exec(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		SELECT gen_random_uuid(), 'payment', 'f-' || g, 'E', '{}', now() - interval '1 hour', now() - interval '1 hour'
		FROM generate_series(1, 300) g`)
	b.insertSeed(t, 50, 10, "ok-")
	cfg := b.config()
	cfg.BatchSize = 10
	cfg.PollInterval = 10 * time.Second
	r := b.relay(t, cfg)
	start(t, r)
	testenv.WaitFor(t, 8*time.Second, "healthy events published past 300 waiting rows (30 windows of them)", func() bool {
		return b.count(t, "published_at IS NOT NULL AND aggregate_id LIKE 'ok-%'") == 50
	})
	if n := b.count(t, "blocked"); n != 300 {
		t.Errorf("%d waiting rows marked blocked, want 300", n)
	}
}

// A claim beside many blocked rows reads them per aggregate of its window (one
// probe of outbox_blocked_idx each), never all of them: an EXISTS there was
// planned as a hashed subplan over every blocked row, on every claim (beside
// 150,000 blocked rows, 175 of a 230 ms claim; the storm's whole ordered gap).
func TestClaimDoesNotReadEveryBlockedRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const blockedAggs = 15_000
	// Each troubled aggregate: a failed head and two waiting rows, marked.
	b.exec(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at, blocked)
		SELECT gen_random_uuid(), 'payment', 'p-' || (g % $1), 'E', '{}',
		       CASE WHEN g < $1 THEN now() END, g >= $1
		FROM generate_series(0, 3 * $1 - 1) g ORDER BY g`, blockedAggs)
	// Healthy rows whose aggregates also have a blocked row, so the probe runs.
	b.insertSeed(t, 2000, 200, "o-")
	b.exec(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, blocked)
		SELECT gen_random_uuid(), 'order', 'o-' || g, 'E', '{}', true FROM generate_series(0, 199) g`)
	b.exec(t, `ANALYZE outbox_event`)
	r := b.relay(t, b.config())
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var raw []byte
	args := r.claimArgs(uuid.New(), 1000, time.Now())
	if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+r.sql.claimOrdered, args).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var plan []struct{ Plan map[string]any }
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		t.Fatalf("plan: %v", err)
	}
	// The window reads 2,000 rows here and probes each one's aggregate; a
	// scan that reads 10,000 rows read the blocked ones wholesale.
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		rows, _ := n["Actual Rows"].(float64)
		loops, _ := n["Actual Loops"].(float64)
		if n["Relation Name"] == "outbox_event" && rows*loops > 10_000 {
			t.Errorf("a %s of outbox_event (%v) read %.0f rows: the claim reads every blocked row", n["Node Type"], n["Subplan Name"], rows*loops)
		}
		children, _ := n["Plans"].([]any)
		for _, c := range children {
			if m, ok := c.(map[string]any); ok {
				walk(m)
			}
		}
	}
	walk(plan[0].Plan)
}
