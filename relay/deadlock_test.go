package relay

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Renew (every tick, from the renew loop) and the shutdown release run while the
// batch's own mark or settle may hold some of its rows. Before, renew waited for
// those rows while locking others in a different order, and PostgreSQL broke the
// resulting deadlock by failing one statement ("renewing lease: deadlock
// detected"). Now neither waits for a row lock at all: with a row held elsewhere
// they return at once, having updated the others, so they cannot be part of a
// deadlock.
func TestRenewAndReleaseNeverWaitForRowLocks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.insertSeed(t, 50, 50, "o-")
	r := b.relay(t, b.config())
	token := uuid.New()
	events, err := r.claim(ctx, token, 50)
	if err != nil || len(events) != 50 {
		t.Fatalf("claim: %d, %v", len(events), err)
	}
	// The batch's mark, in progress: it holds the last event's row.
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	last := events[len(events)-1]
	if _, err := tx.Exec(ctx, r.sql.mark, pgx.StrictNamedArgs{"token": token, "ids": []uuid.UUID{last.id},
		"topics": []string{"t"}, "partitions": []int32{0}, "offsets": []int64{0}}); err != nil {
		t.Fatal(err)
	}
	// Without SKIP LOCKED these would wait for tx until the timeout.
	for name, stmt := range map[string]string{"renew": r.sql.renew, "release": r.sql.release} {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := b.pool.Acquire(sctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(sctx, "SET lock_timeout = '2s'"); err != nil {
			t.Fatal(err)
		}
		ltx, err := conn.Begin(sctx)
		if err != nil {
			t.Fatal(err)
		}
		var args []any
		args = append(args, token)
		if name == "renew" {
			args = append(args, r.cfg.Lease.Milliseconds())
		}
		start := time.Now()
		tag, err := ltx.Exec(sctx, stmt, args...)
		took := time.Since(start)
		_ = ltx.Rollback(ctx)
		_, _ = conn.Exec(ctx, "RESET lock_timeout")
		conn.Release()
		cancel()
		if err != nil {
			t.Fatalf("%s while the mark holds a row: %v (after %v)", name, err, took)
		}
		if tag.RowsAffected() != 49 {
			t.Fatalf("%s updated %d rows, want the 49 not held", name, tag.RowsAffected())
		}
	}
}
