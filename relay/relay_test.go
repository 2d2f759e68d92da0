package relay

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/wire"
)

func TestDrainPublishesEverySeedRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 20_000
	b.insertSeed(t, n, 500, "o-")
	cfg := b.config()
	cfg.Drain = true
	r := b.relay(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if got := b.count(t, "published_at IS NOT NULL AND kafka_topic = '"+b.topic+"' AND kafka_partition IS NOT NULL AND kafka_offset IS NOT NULL"); got != n {
		t.Fatalf("published with coordinates: %d, want %d", got, n)
	}
	recs := b.delivered(t, n, b.topic)
	seen := map[string]bool{}
	for _, rec := range recs {
		seen[header(rec, "event_id")] = true
	}
	ids := b.seqs(t)
	for id := range ids {
		if !seen[id] {
			t.Fatalf("event %s not in Kafka", id)
		}
	}
	// Coordinates in the table match where Kafka has the record.
	rec := recs[len(recs)/2]
	var topic string
	var part int32
	var off int64
	if err := b.pool.QueryRow(ctx, `SELECT kafka_topic, kafka_partition, kafka_offset FROM outbox_event WHERE event_id = $1`,
		header(rec, "event_id")).Scan(&topic, &part, &off); err != nil {
		t.Fatal(err)
	}
	if topic != rec.Topic || part != rec.Partition || off != rec.Offset {
		t.Fatalf("row says %s/%d/%d, Kafka has %s/%d/%d", topic, part, off, rec.Topic, rec.Partition, rec.Offset)
	}
	for _, h := range wire.ReservedHeaders() {
		if header(rec, h) == "" {
			t.Errorf("header %s missing", h)
		}
	}
	if string(rec.Key) != header(rec, "aggregate_id") {
		t.Errorf("key %q, aggregate_id %q", rec.Key, header(rec, "aggregate_id"))
	}
}

func TestConcurrentRelaysKeepAggregateOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// 50,000 events over 1,000 aggregates, plus one hot aggregate of 2,000,
	// interleaved so the hot one's events are spread through the backlog.
	b.insertSeed(t, 48_000, 1000, "o-")
	if _, err := b.pool.Exec(context.Background(), `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'hot', 'OrderUpdated', jsonb_build_object('n', g) FROM generate_series(1, 2000) g ORDER BY g`); err != nil {
		t.Fatal(err)
	}
	b.insertSeed(t, 0, 1, "x") // no-op keeps the helper's shape obvious
	const total = 50_000
	var stops []func() error
	for i := 0; i < 4; i++ {
		cfg := b.config()
		cfg.BatchSize = 500
		stops = append(stops, start(t, b.relay(t, cfg)))
	}
	testenv.WaitFor(t, 3*time.Minute, "all published", func() bool { return b.count(t, "published_at IS NOT NULL") == total })
	for _, stop := range stops {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	recs := b.delivered(t, total, b.topic)
	ids := b.seqs(t)
	copies := map[string]int{}
	last := map[string]int64{}
	for _, rec := range recs { // per partition in offset order
		id := header(rec, "event_id")
		copies[id]++
		if copies[id] > 1 {
			continue // order is about first deliveries
		}
		ev := ids[id]
		if prev, ok := last[ev.agg]; ok && ev.seq < prev {
			t.Fatalf("aggregate %s: seq %d delivered after %d", ev.agg, ev.seq, prev)
		}
		last[ev.agg] = ev.seq
	}
	if len(copies) != total {
		t.Fatalf("distinct delivered %d, want %d", len(copies), total)
	}
	for id, c := range copies {
		if c != 1 {
			t.Fatalf("event %s delivered %d times with no fault", id, c)
		}
	}
}

func TestBrokerOutageBurnsNoAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config()
	cfg.MaxAttempts = 2
	// Warm up the connection, then cut it.
	b.insertSeed(t, 10, 5, "warm-")
	r := b.relay(t, cfg)
	stop := start(t, r)
	testenv.WaitFor(t, 30*time.Second, "warm-up published", func() bool { return b.count(t, "published_at IS NOT NULL") == 10 })
	b.net.cut()
	b.insertSeed(t, 300, 30, "o-")
	// Longer than max-attempts × backoff many times over: attempts would be spent
	// several times over if the outage counted against events.
	// The broker watch notices the outage within seconds, before the batch claimed
	// at the cut has failed: wait for that batch too.
	testenv.WaitFor(t, 30*time.Second, "relay sees the outage and its batch settled", func() bool {
		return !r.Status().BrokerReachable && r.Status().InFlight == 0
	})
	// Let the outage last through several of the relay's attempts to reach
	// Kafka (its probes run once a second): a relay that counted the outage
	// against events would claim and charge them meanwhile.
	refused := b.net.refused.Load()
	testenv.WaitFor(t, 30*time.Second, "three more refused dials to the brokers", func() bool {
		return b.net.refused.Load() >= refused+3
	})
	if got := b.count(t, "failed_at IS NOT NULL"); got != 0 {
		t.Fatalf("%d events failed during a broker outage", got)
	}
	if got := b.count(t, "published_at IS NULL AND attempts > 0"); got != 0 {
		t.Fatalf("%d events were charged attempts during the outage", got)
	}
	b.net.restore()
	testenv.WaitFor(t, 60*time.Second, "all published after the outage", func() bool { return b.count(t, "published_at IS NOT NULL") == 310 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !r.Status().BrokerReachable {
		t.Fatal("status still says unreachable")
	}
}

func TestPoisonEventsFailAtOnceAndOthersFlow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// Aggregate big-1: a payload above the max message size, then a normal event
	// that must wait behind it. Aggregate "bad/type": an illegal topic name.
	if _, err := b.pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload) VALUES
		(gen_random_uuid(), 'order', 'big-1', 'OrderPlaced', jsonb_build_object('blob', repeat('x', 30000))),
		(gen_random_uuid(), 'order', 'big-1', 'OrderPaid', '{}'),
		(gen_random_uuid(), 'bad/type', 'b-1', 'Weird', '{}'),
		(gen_random_uuid(), 'bad/type', 'b-1', 'Weird2', '{}')`); err != nil {
		t.Fatal(err)
	}
	b.insertSeed(t, 200, 20, "ok-")
	cfg := b.config()
	cfg.MaxMessageBytes = 20_000
	cfg.Drain = true
	r := b.relay(t, cfg)
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := r.Run(dctx); err != nil {
		t.Fatal(err)
	}
	if got := b.count(t, "aggregate_id LIKE 'ok-%' AND published_at IS NOT NULL"); got != 200 {
		t.Fatalf("healthy events published: %d, want 200", got)
	}
	var lastErr string
	var attempts int
	if err := b.pool.QueryRow(ctx, `SELECT last_error, attempts FROM outbox_event WHERE aggregate_id = 'big-1' AND event_type = 'OrderPlaced' AND failed_at IS NOT NULL`).Scan(&lastErr, &attempts); err != nil {
		t.Fatalf("oversized event not failed: %v", err)
	}
	if !strings.Contains(lastErr, "too large") || attempts != 1 {
		t.Fatalf("oversized: last_error %q attempts %d", lastErr, attempts)
	}
	if err := b.pool.QueryRow(ctx, `SELECT last_error FROM outbox_event WHERE aggregate_type = 'bad/type' AND event_type = 'Weird' AND failed_at IS NOT NULL`).Scan(&lastErr); err != nil {
		t.Fatalf("illegal-topic event not failed: %v", err)
	}
	if !strings.Contains(lastErr, "invalid topic") {
		t.Fatalf("illegal topic: last_error %q", lastErr)
	}
	// The later events of both aggregates wait, unpublished, not failed, not charged.
	if got := b.count(t, "event_type IN ('OrderPaid', 'Weird2') AND published_at IS NULL AND failed_at IS NULL AND attempts = 0"); got != 2 {
		t.Fatalf("events behind poison: %d waiting uncharged, want 2", got)
	}
}

// A missing topic is the events' trouble, not an outage: each attempt is counted
// and recorded, with a backoff, and after --max-attempts the events fail (only an
// unreachable broker refunds attempts).
func TestMissingTopicBacksOffThenFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if b.kafka.Fake == nil {
		t.Skip("the real broker auto-creates topics; the missing-topic case runs against kfake")
	}
	cfg := b.config()
	cfg.TopicTemplate = "nowhere.{aggregate_type}"
	cfg.MaxAttempts = 2
	b.insertSeed(t, 3, 3, "o-")
	// kfake in testenv auto-creates topics; a client without AllowAutoTopicCreation
	// does not ask for it, so the topic stays missing.
	r := b.relay(t, cfg)
	start(t, r)
	testenv.WaitFor(t, 30*time.Second, "missing-topic events failed after their attempts", func() bool {
		return b.count(t, "failed_at IS NOT NULL AND attempts = 2 AND last_error LIKE '%does not exist%(out of attempts)'") == 3
	})
	if got := b.count(t, "published_at IS NOT NULL"); got != 0 {
		t.Fatalf("%d events published to a missing topic", got)
	}
}

// A drain must not stop while events are only briefly held back: here the first
// claim finds every aggregate's head scheduled (a retry due in a moment), and the
// drain has to wait for it rather than call the outbox drained.
func TestDrainWaitsForScheduledRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insertSeed(t, 300, 30, "o-")
	if _, err := b.pool.Exec(context.Background(), `UPDATE outbox_event SET available_at = now() + interval '300 milliseconds', attempts = 1
		WHERE seq IN (SELECT min(seq) FROM outbox_event GROUP BY aggregate_id)`); err != nil {
		t.Fatal(err)
	}
	cfg := b.config()
	cfg.Drain = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.relay(t, cfg).Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.count(t, "published_at IS NOT NULL"); got != 300 {
		t.Fatalf("drain stopped with %d of 300 published", got)
	}
}

func TestUnreachableBrokerAtStartIsReportedAndAwaited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.net.cut()
	r := b.relay(t, b.config())
	stop := start(t, r)
	testenv.WaitFor(t, 30*time.Second, "status says Kafka is unreachable", func() bool { return !r.Status().BrokerReachable })
	b.insertSeed(t, 20, 5, "o-")
	b.net.restore()
	testenv.WaitFor(t, time.Minute, "published once Kafka answers", func() bool { return b.count(t, "published_at IS NOT NULL") == 20 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := b.count(t, "attempts > 1 OR failed_at IS NOT NULL"); got != 0 {
		t.Fatalf("%d events charged or failed for an outage", got)
	}
}
