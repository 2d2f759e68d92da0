package relay

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestClaimLoadsPayloadsWithinTheByteBudget: a claim loads payloads in seq
// order while they sum to Config.BatchBytes (the first always), never one
// larger than a record may be; the events left out are released uncharged
// and published by later claims, each aggregate in order; the oversized one
// fails as too large without being loaded, its follower waiting behind it.
// In both ordering modes.
func TestClaimLoadsPayloadsWithinTheByteBudget(t *testing.T) {
	t.Parallel()
	for _, ordering := range []Ordering{OrderAggregate, OrderNone} {
		t.Run(string(ordering), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			const blob = 40_000 // each payload about 40 KB as text
			b.exec(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
				SELECT gen_random_uuid(), 'order', 'a-' || (g % 3), 'OrderPlaced', jsonb_build_object('n', g, 'blob', repeat('x', $1))
				FROM generate_series(1, 30) g`, blob)
			b.exec(t, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload) VALUES
				(gen_random_uuid(), 'order', 'huge', 'OrderPlaced', jsonb_build_object('blob', repeat('y', 300000))),
				(gen_random_uuid(), 'order', 'huge', 'OrderPaid', '{}')`)
			cfg := b.config()
			cfg.Ordering = ordering
			cfg.MaxMessageBytes = 200_000
			cfg.BatchBytes = 100_000 // two or three 40 KB payloads a claim
			cfg.BatchSize = 50
			cfg.Drain = true
			r := b.relay(t, cfg)

			// One claim, as the relay makes it: what it loaded.
			events, err := r.claim(ctx, uuid.New(), cfg.BatchSize)
			if err != nil {
				t.Fatal(err)
			}
			var loaded, withheld int64
			var n int
			for _, e := range events {
				if e.payload != nil {
					loaded += int64(len(e.payload))
					n++
				} else if r.deferred(e) {
					withheld++
				}
			}
			if n == 0 || loaded > int64(cfg.BatchBytes)+blob+100 || withheld == 0 {
				t.Fatalf("one claim of %d events loaded %d payloads, %d bytes (budget %d), and left out %d", len(events), n, loaded, cfg.BatchBytes, withheld)
			}
			b.exec(t, `UPDATE outbox_event SET lease_token = NULL, lease_until = NULL, attempts = 0`)

			dctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := r.Run(dctx); err != nil {
				t.Fatal(err)
			}
			if got := b.count(t, "aggregate_id LIKE 'a-%' AND published_at IS NOT NULL AND attempts = 1"); got != 30 {
				t.Fatalf("events within a record's size published with one attempt each: %d, want 30", got)
			}
			if ordering == OrderAggregate {
				b.checkOrder(t, 30)
			}
			var lastErr string
			if err := b.pool.QueryRow(ctx, `SELECT last_error FROM outbox_event
				WHERE aggregate_id = 'huge' AND event_type = 'OrderPlaced' AND failed_at IS NOT NULL`).Scan(&lastErr); err != nil {
				t.Fatalf("the oversized event is not failed: %v", err)
			}
			if !strings.Contains(lastErr, "too large") || !strings.Contains(lastErr, "not loaded") {
				t.Fatalf("the oversized event's last_error: %q", lastErr)
			}
			if ordering == OrderAggregate && b.count(t, "aggregate_id = 'huge' AND event_type = 'OrderPaid' AND published_at IS NULL AND failed_at IS NULL") != 1 {
				t.Fatal("the event behind the oversized one is not waiting")
			}
		})
	}
}
