package relay

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// Found by TestFaultSchedule (seed 12): the ordered claim skips an aggregate's
// head when another transaction holds its row (SKIP LOCKED) and takes the events
// behind it. The holder can be the head's previous batch settling it after its
// lease ran out (a renew that failed, a stall), a renew, or an operator action;
// the later events then reach Kafka before the head.
func TestClaimDoesNotPassALockedHead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.insertSeed(t, 3, 1, "h-")
	r := b.relay(t, b.config())
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM outbox_event WHERE seq = (SELECT min(seq) FROM outbox_event) FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	events, err := r.claim(ctx, uuid.New(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 0 {
		t.Fatalf("claimed %d events behind the locked head of their aggregate", len(events))
	}
}

// Found by TestFaultSchedule with OUTBOXTOP_FAULT_SINGLE_RESET=1: after an
// operator resets the lease of one event of an in-flight batch, the ordered
// claim's head check (only the first unpublished event's lease) no longer sees
// the rest of the batch in flight, and takes a later event of the aggregate,
// which can then reach Kafka before the batch's events.
func TestClaimDoesNotPassLeasedEventsAfterAResetHead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.insertSeed(t, 3, 1, "h-")
	r := b.relay(t, b.config())
	if evs, err := r.claim(ctx, uuid.New(), 10); err != nil || len(evs) != 3 {
		t.Fatalf("first claim: %d, %v", len(evs), err)
	}
	// reset-lease of the head only (inspect's statement).
	if _, err := b.pool.Exec(ctx, `UPDATE outbox_event SET lease_until = now() WHERE seq = (SELECT min(seq) FROM outbox_event)`); err != nil {
		t.Fatal(err)
	}
	b.insertSeed(t, 1, 1, "h-")
	events, err := r.claim(ctx, uuid.New(), 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.seq == 4 {
			t.Fatalf("claimed seq 4 while seq 2 and 3 are in flight (claimed %d events)", len(events))
		}
	}
}

// A session that holds a hot aggregate's head row (an open transaction, an
// operator's tool) while that aggregate's later events fill every claim's
// window: the claim passes the held aggregate over for a while instead of
// coming back empty forever, the other aggregates flow, the held head is
// reported, and the hot aggregate follows in order once the session lets go.
func TestHeldHotHeadDoesNotStallOtherAggregates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.insertSeed(t, 200, 1, "hot-")
	b.insertSeed(t, 30, 10, "ok-")
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM outbox_event WHERE seq = (SELECT min(seq) FROM outbox_event) FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	cfg := b.config()
	cfg.BatchSize = 10
	cfg.LockTimeout = 200 * time.Millisecond
	r := b.relay(t, cfg)
	start(t, r)
	testenv.WaitFor(t, 20*time.Second, "the other aggregates published", func() bool {
		return b.count(t, "published_at IS NOT NULL AND aggregate_id LIKE 'ok-%'") == 30
	})
	if n := b.count(t, "published_at IS NOT NULL AND aggregate_id LIKE 'hot-%'"); n != 0 {
		t.Fatalf("%d events of the held aggregate published past its head", n)
	}
	testenv.WaitFor(t, 10*time.Second, "held head reported", func() bool { return r.Status().HeadsLocked == 1 })
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "all published", func() bool { return b.count(t, "published_at IS NOT NULL") == 230 })
	testenv.WaitFor(t, 10*time.Second, "report cleared", func() bool { return r.Status().HeadsLocked == 0 })
	b.checkOrder(t, 230)
}
