package relay

import (
	"context"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// A backlog too large to count (past exactMax rows, or not counted within
// exactTimeout) is estimated, not reported
// as a database that does not answer: up stays 1 (no false "database
// unreachable" page in the largest outage), the counts are the planner's, the
// lag is still exact, and the collector keeps estimating for a while instead of
// timing out on every read.
func TestBacklogTooLargeToCountIsEstimated(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		SELECT gen_random_uuid(), 'order', 'o-' || g, 'E', '{}', now() - interval '10 seconds', now() - interval '10 seconds'
		FROM generate_series(1, 2000) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at, last_error)
		SELECT gen_random_uuid(), 'order', 'f-' || g, 'E', '{}', now(), 'boom' FROM generate_series(1, 500) g;
		ANALYZE outbox_event`)
	if err != nil {
		t.Fatal(err)
	}
	c := NewBacklogCollector(pool, "public")
	b, err := c.read()
	if err != nil || b.estimated || b.ready != 2000 || b.failed != 500 {
		t.Fatalf("counted %+v (%v), want exactly 2000 ready and 500 failed", b, err)
	}

	c = NewBacklogCollector(pool, "public")
	c.exactTimeout = time.Nanosecond // counting never finishes in time
	b, err = c.read()
	if err != nil || !b.estimated {
		t.Fatalf("read %+v (%v), want estimated counts and no error", b, err)
	}
	if b.ready < 1500 || b.ready > 2500 || b.failed < 300 || b.failed > 700 || b.scheduled > 100 {
		t.Errorf("estimated %+v, want about 2000 ready, 500 failed, no scheduled", b)
	}
	if b.oldestReady < 9 || b.oldestReady > 60 || b.oldestPending < 9 || b.oldestPending > 60 {
		t.Errorf("ages %+v, want about 10 s", b)
	}
	if !c.estimateUntil.After(time.Now().Add(backlogEstimateFor - time.Minute)) {
		t.Errorf("estimating until %v, want about %v from now", c.estimateUntil, backlogEstimateFor)
	}
	// Past exactMax unpublished rows by the planner's statistics, the counts
	// are estimated without trying to count.
	c = NewBacklogCollector(pool, "public")
	c.exactMax = 1000
	if b, err = c.read(); err != nil || !b.estimated || !c.estimateUntil.IsZero() {
		t.Errorf("read past exactMax %+v (%v), want estimated (and no timeout)", b, err)
	}
	// After a timeout, the next reads estimate without trying to count first.
	c = NewBacklogCollector(pool, "public")
	c.exactTimeout = time.Nanosecond
	if _, err = c.read(); err != nil {
		t.Fatal(err)
	}
	c.exactTimeout = time.Minute
	c.cache.readAt = time.Time{}
	if b, err = c.read(); err != nil || !b.estimated {
		t.Errorf("second read %+v (%v), want estimated", b, err)
	}
}

// The blocked count is exact up to blockedProbe failed or scheduled events of
// each kind, and past it the planner's estimate, never below what was found.
func TestHealthBlockedCountIsBoundedAtIncidentScale(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	ctx := context.Background()
	// 30 aggregates headed by a failed event with 2 more failed behind it, 20
	// headed by a scheduled retry, 10 healthy; a failed event behind a ready
	// one does not block (its aggregate is not blocked by it: the ready head is
	// publishable).
	_, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at, last_error)
		SELECT gen_random_uuid(), 'order', 'f-' || (g % 30), 'E', '{}', now(), 'boom' FROM generate_series(0, 89) g ORDER BY g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, available_at, attempts)
		SELECT gen_random_uuid(), 'order', 's-' || g, 'E', '{}', now() + interval '1 hour', 1 FROM generate_series(0, 19) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'ok-' || g, 'E', '{}' FROM generate_series(0, 9) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at, last_error)
		SELECT gen_random_uuid(), 'order', 'ok-' || g, 'E', '{}', now(), 'boom' FROM generate_series(0, 9) g;
		ANALYZE outbox_event`)
	if err != nil {
		t.Fatal(err)
	}
	c := NewHealthCollector(pool, "public")
	n, err := c.readBlocked(ctx)
	if err != nil || n != 50 {
		t.Fatalf("blocked %d (%v), want exactly 50", n, err)
	}
	// Probing 5 of each kind: 100 failed events are more, so the count is the
	// estimate of aggregates with a failed or scheduled event (60 here), not
	// the heads among the 10 rows probed.
	c.blockedProbe = 5
	n, err = c.readBlocked(ctx)
	if err != nil || n < 40 || n > 80 {
		t.Fatalf("estimated %d (%v), want about 60 (the planner's estimate)", n, err)
	}
}
