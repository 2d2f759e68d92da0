package relay

import (
	"context"
	"testing"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

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
