package console

import (
	"context"
	"strings"
	"testing"
)

// incidentTables are outbox tables of an incident, each with one aggregate
// whose blocker holds back more healthy events than any other: the one on-call
// must reach first. Each is SQL run on an empty outbox, relative to $1 (the
// console's clock).
var incidentTables = map[string]string{
	// Many old all-failed aggregates (their followers failed too, not waiting),
	// scheduled retries, a trickle of publishable events, and one young poison
	// with healthy events waiting behind it.
	"storm beside one poison": `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, attempts, failed_at, last_error)
		SELECT gen_random_uuid(), 'account', 'a-' || (g / 3), 'AccountOpened', '{}', $1::timestamptz - interval '2 hours' + g * interval '1 ms',
			$1::timestamptz - interval '2 hours', 10, $1::timestamptz - interval '1 hour', 'record too large'
		FROM generate_series(1, 3000) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, attempts, last_error)
		SELECT gen_random_uuid(), 'payment', 'p-' || g, 'PaymentTaken', '{}', $1::timestamptz - interval '30 minutes', $1::timestamptz + interval '10 minutes', 3, 'broker not available'
		FROM generate_series(1, 500) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, attempts, failed_at, last_error)
		VALUES ('00000000-0000-4000-8000-00000000b10c', 'order', 'o-7', 'OrderPlaced', '{}', $1::timestamptz - interval '5 minutes', $1::timestamptz - interval '5 minutes', 1, $1::timestamptz - interval '4 minutes', 'poison: payload does not parse');
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		SELECT gen_random_uuid(), 'order', 'o-7', 'OrderPaid', '{}', $1::timestamptz - interval '4 minutes', $1::timestamptz - interval '4 minutes'
		FROM generate_series(1, 300) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		SELECT gen_random_uuid(), 'order', 'o-' || (100 + g), 'OrderPlaced', '{}', $1::timestamptz - interval '1 second', $1::timestamptz - interval '1 second'
		FROM generate_series(1, 50) g;`,
	// Blockers that are scheduled, not failed: the worst one is neither the oldest
	// nor the first in seq.
	"scheduled heads": `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, attempts, last_error)
		SELECT gen_random_uuid(), 'invoice', 'i-' || g, 'InvoiceIssued', '{}', $1::timestamptz - interval '1 hour', $1::timestamptz + interval '1 hour', 5, 'NOT_LEADER_FOR_PARTITION'
		FROM generate_series(1, 40) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		SELECT gen_random_uuid(), 'invoice', 'i-' || (g % 40 + 1), 'InvoiceSent', '{}', $1::timestamptz - interval '50 minutes', $1::timestamptz - interval '50 minutes'
		FROM generate_series(1, 80) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, attempts, last_error)
		VALUES ('00000000-0000-4000-8000-00000000b10c', 'shipment', 's-3', 'ShipmentBooked', '{}', $1::timestamptz - interval '10 minutes', $1::timestamptz + interval '20 minutes', 4, 'topic outbox.shipment does not exist');
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		SELECT gen_random_uuid(), 'shipment', 's-3', 'ShipmentSent', '{}', $1::timestamptz - interval '9 minutes', $1::timestamptz - interval '9 minutes'
		FROM generate_series(1, 25) g;`,
	// A quiet table: the demo's shape, one poison and a few events behind it,
	// live leases and publishable work around it.
	"quiet hour": `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, lease_token, lease_until, attempts)
		SELECT gen_random_uuid(), 'order', 'o-' || g, 'OrderPlaced', '{}', $1::timestamptz - interval '2 seconds', $1::timestamptz - interval '2 seconds', gen_random_uuid(), $1::timestamptz + interval '30 seconds', 1
		FROM generate_series(1, 20) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, attempts, failed_at, last_error)
		VALUES ('00000000-0000-4000-8000-00000000b10c', 'customer', 'c-1', 'CustomerCreated', '{}', $1::timestamptz - interval '1 minute', $1::timestamptz - interval '1 minute', 1, $1::timestamptz - interval '50 seconds', 'record too large: 2000000 bytes');
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		SELECT gen_random_uuid(), 'customer', 'c-1', 'CustomerUpdated', '{}', $1::timestamptz - interval '40 seconds', $1::timestamptz - interval '40 seconds'
		FROM generate_series(1, 7) g;`,
}

// worstBlockerSQL is, by the definitions and nothing else, the event that blocks
// the aggregate with the most ready events behind it: failed or scheduled, with no
// earlier unpublished event of its aggregate.
const worstBlockerSQL = `
	SELECT h.event_id::text FROM outbox_event h
	WHERE h.published_at IS NULL AND (h.failed_at IS NOT NULL OR (h.available_at > now() AND (h.lease_until IS NULL OR h.lease_until <= now())))
	  AND NOT EXISTS (SELECT 1 FROM outbox_event e WHERE e.published_at IS NULL
		AND (e.aggregate_type, e.aggregate_id) = (h.aggregate_type, h.aggregate_id) AND e.seq < h.seq)
	ORDER BY (SELECT count(*) FROM outbox_event w WHERE w.published_at IS NULL AND w.failed_at IS NULL
		AND (w.lease_until IS NULL OR w.lease_until <= now()) AND w.available_at <= now()
		AND (w.aggregate_type, w.aggregate_id) = (h.aggregate_type, h.aggregate_id) AND w.seq > h.seq) DESC
	LIMIT 1`

// TestFiveKeysToTheWorstBlocker: from the console's first screen at 80×24, the
// blocking event of the aggregate with the most events waiting, with its
// last_error, is at most five keys away on every incident table.
func TestFiveKeysToTheWorstBlocker(t *testing.T) {
	t.Parallel()
	for name, table := range incidentTables {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, Options{})
			ctx := context.Background()
			if _, err := b.pool.Exec(ctx, "TRUNCATE outbox_event"); err != nil {
				t.Fatal(err)
			}
			for _, stmt := range strings.Split(table, ";") {
				if strings.TrimSpace(stmt) == "" {
					continue
				}
				if _, err := b.pool.Exec(ctx, stmt, b.base); err != nil {
					t.Fatalf("%v\n%s", err, stmt)
				}
			}
			if _, err := b.pool.Exec(ctx, "ANALYZE outbox_event"); err != nil {
				t.Fatal(err)
			}
			var want string
			if err := b.pool.QueryRow(ctx, worstBlockerSQL).Scan(&want); err != nil {
				t.Fatal(err)
			}
			// A fresh console: the operator's login.
			b.m = New(b.m.opts)
			b.size(80, 24)
			b.run(b.m.startLoad())
			keys := []string{"enter", "enter"}
			b.keys(keys...)
			if b.m.mode != modeDetail || b.m.detail.id != want {
				t.Fatalf("after %v: mode %d on %q, want the detail of %s\n%s", keys, b.m.mode, b.m.detail.id, want, b.text())
			}
			var lastError string
			if err := b.pool.QueryRow(ctx, "SELECT last_error FROM outbox_event WHERE event_id = $1", want).Scan(&lastError); err != nil {
				t.Fatal(err)
			}
			if screen := b.text(); !strings.Contains(screen, lastError) {
				t.Fatalf("the blocker's last_error %q is not on screen after %v:\n%s", lastError, keys, screen)
			}
			t.Logf("%s: %v reach %s", name, keys, want)
		})
	}
}
