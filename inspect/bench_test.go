package inspect_test

import (
	"context"
	"testing"

	"github.com/outboxtop/outboxtop/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// BenchmarkSnapshot: a full Snapshot over 1,000,000 published events (spread over
// the last 7 days, ~6,000 an hour) and 100,000 unpublished ones (ready, with 1,000
// scheduled, 1,000 failed heading their aggregates and 500 leased), after VACUUM
// ANALYZE as autovacuum would leave it.
//
//	go test -run '^$' -bench BenchmarkSnapshot -benchtime 50x ./inspect/
func BenchmarkSnapshot(b *testing.B) {
	pool, _ := testenv.Pool(b)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
			created_at, available_at, attempts, published_at, kafka_topic, kafka_partition, kafka_offset)
		SELECT gen_random_uuid(), 'order', (g % 50000)::text, 'Order' || (g % 8),
			'{"amount": 42, "currency": "EUR"}',
			now() - (g * interval '600 milliseconds') - interval '1 second',
			now() - (g * interval '600 milliseconds') - interval '1 second', 1,
			now() - (g * interval '600 milliseconds'), 'outbox.order', g % 12, g
		FROM generate_series(1, 1000000) g`,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
			created_at, available_at, attempts, failed_at, last_error, lease_token, lease_until)
		SELECT gen_random_uuid(), 'order', (g % 20000)::text, 'Order' || (g % 8), '{"amount": 42}',
			now() - (g * interval '1 millisecond'),
			CASE WHEN g % 100 = 1 THEN now() + interval '1 minute' ELSE now() - (g * interval '1 millisecond') END,
			CASE WHEN g % 100 IN (1, 2) THEN 3 ELSE 0 END,
			CASE WHEN g % 100 = 2 THEN now() END,
			CASE WHEN g % 100 IN (1, 2) THEN 'broker: MESSAGE_TOO_LARGE' END,
			CASE WHEN g % 200 = 3 THEN gen_random_uuid() END,
			CASE WHEN g % 200 = 3 THEN now() + interval '30 seconds' END
		FROM generate_series(1, 100000) g`,
		`INSERT INTO consumed_event (consumer_name, event_id, consumed_at)
		SELECT 'consumer-' || (g % 3), gen_random_uuid(), now() - (g * interval '1 second')
		FROM generate_series(1, 300000) g`,
		`VACUUM ANALYZE outbox_event`,
		`VACUUM ANALYZE consumed_event`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	in, err := inspect.New(pool, "public")
	if err != nil {
		b.Fatal(err)
	}
	s, err := in.Snapshot(ctx) // warm the cache and check the shape
	if err != nil {
		b.Fatal(err)
	}
	if s.Counts.Pending < 98000 || s.Counts.Failed != 1000 || !s.Counts.Published.Estimate {
		b.Fatalf("unexpected snapshot: %+v", s.Counts)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := in.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.Logf("counts %+v blocked %d published %+v", s.Counts, s.Blocked.Count, s.Published)
}
