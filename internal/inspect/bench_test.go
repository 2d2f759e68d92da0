package inspect_test

import (
	"slices"
	"time"

	"context"
	"testing"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

// BenchmarkSnapshot: a full Snapshot over 1,000,000 published events (spread over
// the last 7 days, ~6,000 an hour) and 100,000 unpublished ones (ready, with 1,000
// scheduled, 1,000 failed heading their aggregates and 500 leased), after VACUUM
// ANALYZE as autovacuum would leave it.
//
//	go test -run '^$' -bench BenchmarkSnapshot -benchtime 50x ./internal/inspect/
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
	// Pending is past the rows a snapshot counts: a lower bound.
	if s.Counts.Pending > 100000 || s.Counts.Bounds.Pending != inspect.LowerBound || s.Counts.Failed != 1000 || !s.Counts.Published.Estimate {
		b.Fatalf("unexpected snapshot: %+v", s.Counts)
	}
	snapshotMedian(ctx, b, in)
	b.Logf("counts %+v blocked %d published %+v", s.Counts, s.Blocked.Count, s.Published)
}

// BenchmarkSnapshotIncident: a full Snapshot in a broker-outage-plus-poison incident:
// 1,000,000 failed events in 100,000 aggregates, 200,000 scheduled in 50,000
// aggregates, 100,000 ready (half of them behind those) and 100,000 published in
// the last half hour, after VACUUM ANALYZE. The snapshot counts a bounded number of
// rows and gives lower bounds past them (marked), so its cost does not grow with
// the incident. Counting where it used the statistics (failed up to 100,000 along
// outbox_failed_idx, the not failed rows along three ranges of 5,000) costs it
// about 3-4x: 105-155 ms median on a shared 2-core machine where the estimating
// snapshot took 29-39 ms (BenchmarkSnapshot: 55 ms, was 59).
//
//	go test -run '^$' -bench 'BenchmarkSnapshotIncident$' -benchtime 30x ./internal/inspect/
func BenchmarkSnapshotIncident(b *testing.B) { benchSnapshotIncident(b) }

// BenchmarkSnapshotIncidentHotAggregate: the same incident, then 10,000 ready
// events of one hot aggregate and, newest of all, 150,000 more retries
// scheduled (a topic gone missing a minute ago): the rows a snapshot samples
// from the end of the relay's order are the storm's and the hot aggregate's.
// Asking of each sampled row whether any earlier event of its aggregate was
// failed or scheduled read the hot aggregate's whole backlog per row (0.85 s);
// the waiting fragment (sql/fragments.sql) asks its head.
//
//	go test -run '^$' -bench 'BenchmarkSnapshotIncidentHotAggregate$' -benchtime 30x ./internal/inspect/
func BenchmarkSnapshotIncidentHotAggregate(b *testing.B) {
	benchSnapshotIncident(b,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		SELECT gen_random_uuid(), 'order', 'hot', 'Order' || (g % 8), '{"amount": 42}',
			now() - interval '5 minutes' + g * interval '10 milliseconds', now() - interval '5 minutes' + g * interval '10 milliseconds'
		FROM generate_series(1, 10000) g`,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
			attempts, last_error)
		SELECT gen_random_uuid(), 'invoice', 'm-' || (g % 50000), 'Invoice' || (g % 4), '{"amount": 42}',
			now() - interval '1 minute', now() + interval '1 hour', 1, 'kafka: UNKNOWN_TOPIC_OR_PARTITION'
		FROM generate_series(1, 150000) g`,
		`VACUUM ANALYZE outbox_event`)
}

func benchSnapshotIncident(b *testing.B, more ...string) {
	pool, _ := testenv.Pool(b)
	ctx := context.Background()
	for _, q := range append([]string{
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
			attempts, failed_at, last_error)
		SELECT gen_random_uuid(), 'order', 'f-' || (g % 100000), 'Order' || (g % 8), '{"amount": 42}',
			now() - interval '2 hours' + g * interval '1 millisecond', now() - interval '2 hours' + g * interval '1 millisecond', 10,
			now() - interval '1 hour' + g * interval '1 millisecond', 'broker: MESSAGE_TOO_LARGE ' || (g % 50)
		FROM generate_series(1, 1000000) g`,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
			attempts, last_error)
		SELECT gen_random_uuid(), 'order', 's-' || (g % 50000), 'Order' || (g % 8), '{"amount": 42}',
			now() - interval '30 minutes' + g * interval '1 millisecond', now() + interval '1 hour' + g * interval '1 millisecond',
			3, 'broker: unreachable'
		FROM generate_series(1, 200000) g`,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		SELECT gen_random_uuid(), 'order',
			CASE WHEN g % 4 = 0 THEN 'f-' || (g % 100000) WHEN g % 4 = 1 THEN 's-' || (g % 50000) ELSE 'r-' || (g % 25000) END,
			'Order' || (g % 8), '{"amount": 42}',
			now() - interval '10 minutes' + g * interval '5 milliseconds', now() - interval '10 minutes' + g * interval '5 milliseconds'
		FROM generate_series(1, 100000) g`,
		`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
			attempts, published_at, kafka_topic, kafka_partition, kafka_offset)
		SELECT gen_random_uuid(), 'order', 'p-' || (g % 30000), 'Order' || (g % 8), '{"amount": 42}',
			now() - g * interval '18 milliseconds' - interval '1 second', now() - g * interval '18 milliseconds' - interval '1 second', 1,
			now() - g * interval '18 milliseconds', 'outbox.order', g % 12, g
		FROM generate_series(1, 100000) g`,
		`INSERT INTO consumed_event (consumer_name, event_id, consumed_at)
		SELECT 'consumer-' || (g % 3), gen_random_uuid(), now() - (g * interval '10 milliseconds')
		FROM generate_series(1, 300000) g`,
		`VACUUM ANALYZE outbox_event`,
		`VACUUM ANALYZE consumed_event`,
	}, more...) {
		if _, err := pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	in, err := inspect.New(pool, "public")
	if err != nil {
		b.Fatal(err)
	}
	s, err := in.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	c := s.Counts
	if !s.Partial || c.Bounds.Failed != inspect.LowerBound || c.Failed > 1000000 || c.Scheduled > 200000 || c.Ready > 110000 ||
		s.Blocked.Bound != inspect.LowerBound {
		b.Fatalf("unexpected snapshot: %+v blocked %d (%q), partial %v", c, s.Blocked.Count, s.Blocked.Bound, s.Partial)
	}
	snapshotMedian(ctx, b, in)
	b.Logf("counts %+v blocked %s publishable age %v", c, s.Blocked.Bound.Format(s.Blocked.Count), s.OldestPublishableAge)
}

// snapshotMedian runs in.Snapshot b.N times and reports the median as median-ms
// (a mean would hide the shape: the first reads warm the cache).
func snapshotMedian(ctx context.Context, b *testing.B, in *inspect.Inspector) {
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := in.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
}
