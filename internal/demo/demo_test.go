package demo_test

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/demo"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/outbox"
	"github.com/outboxtop/outboxtop/wire"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type testBundle struct {
	pool     *pgxpool.Pool
	counters *demo.Counters
	orders   *demo.Orders
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool, _ := testenv.Pool(t)
	if err := demo.Migrate(context.Background(), pool, ""); err != nil {
		t.Fatal(err)
	}
	b := &testBundle{pool: pool, counters: &demo.Counters{}}
	var err error
	b.orders, err = demo.NewOrders(pool, b.counters, demo.OrderConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *testBundle) scalar(t *testing.T, sql string) int64 {
	t.Helper()
	var n int64
	if err := b.pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// steps drives the order service by hand: n transactions.
func (b *testBundle) steps(t *testing.T, n int) {
	t.Helper()
	ctx := context.Background()
	if err := b.orders.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := b.orders.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOrdersCommitChangesWithTheirEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.steps(t, 600)

	committed := b.counters.Snapshot().Committed
	if got := b.scalar(t, `SELECT count(*) FROM outbox_event`); got != committed || committed < 600 {
		t.Errorf("outbox has %d events, counters say %d committed (want ≥ 600)", got, committed)
	}
	// Every order change wrote exactly one order event carrying the new version.
	if ev, ver := b.scalar(t, `SELECT count(*) FROM outbox_event WHERE aggregate_type = 'order'`),
		b.scalar(t, `SELECT sum(version) FROM outboxtop_demo.orders`); ev != ver {
		t.Errorf("%d order events for a total version of %d", ev, ver)
	}
	// In seq order, each order's events carry versions 1, 2, 3, …
	if bad := b.scalar(t, `SELECT count(*) FROM (
			SELECT (payload->>'version')::int AS v, row_number() OVER (PARTITION BY aggregate_id ORDER BY seq) AS n
			FROM outbox_event WHERE aggregate_type = 'order') x WHERE v <> n`); bad != 0 {
		t.Errorf("%d order events out of version order", bad)
	}
	if p, o := b.scalar(t, `SELECT count(*) FROM outbox_event WHERE event_type = 'PaymentCaptured'`),
		b.scalar(t, `SELECT count(*) FROM outboxtop_demo.orders WHERE payment_id IS NOT NULL`); p != o || p == 0 {
		t.Errorf("%d payment events for %d paid orders", p, o)
	}
	types := b.scalar(t, `SELECT count(DISTINCT event_type) FROM outbox_event`)
	if types < 6 {
		t.Errorf("only %d event types written", types)
	}
	// The hot orders get a large share: at least 10% of the order events.
	if hot := b.scalar(t, `SELECT count(*) FROM outbox_event WHERE aggregate_id LIKE 'hot-%'`); hot*10 < committed {
		t.Errorf("hot orders got %d of %d events", hot, committed)
	}
	if many := b.scalar(t, `SELECT count(DISTINCT aggregate_id) FROM outbox_event`); many < 100 {
		t.Errorf("only %d aggregates", many)
	}
}

func TestOrdersRunUntilCancelled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.orders.SetRate(1000)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.orders.Run(ctx) }()
	wait, cancelWait := context.WithTimeout(context.Background(), time.Minute)
	defer cancelWait()
	if err := b.counters.WaitFor(wait, func(s demo.Stats) bool { return s.Committed >= 200 }); err != nil {
		t.Fatalf("order service committed %d events: %v", b.counters.Snapshot().Committed, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	// Run has returned: its workers are done and every commit is counted.
	s := b.counters.Snapshot()
	if got := b.scalar(t, `SELECT count(*) FROM outbox_event`); got != s.Committed {
		t.Errorf("outbox has %d events, counters say %d", got, s.Committed)
	}
	if s.WriteErrors != 0 {
		t.Errorf("%d failed transactions", s.WriteErrors)
	}
	// Concurrent workers on one order (the hot ones) serialise on its row:
	// its events' seq order is still version order.
	if bad := b.scalar(t, `SELECT count(*) FROM (
			SELECT (payload->>'version')::int AS v, row_number() OVER (PARTITION BY aggregate_id ORDER BY seq) AS n
			FROM outbox_event WHERE aggregate_type = 'order') x WHERE v <> n`); bad != 0 {
		t.Errorf("%d order events out of version order", bad)
	}
}

func TestInjectPoison(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.steps(t, 1)
	id, err := b.orders.InjectPoison(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	if err := b.pool.QueryRow(context.Background(), `SELECT octet_length(payload::text) FROM outbox_event
		WHERE event_id = $1 AND aggregate_id = 'hot-1' AND event_type = 'OrderPoisoned'`, id).Scan(&size); err != nil {
		t.Fatal(err)
	}
	if size < 2<<20 {
		t.Errorf("poison payload is %d bytes, want more than 2 MiB", size)
	}
	if s := b.counters.Snapshot(); s.Poisoned != 1 {
		t.Errorf("Poisoned = %d", s.Poisoned)
	}
}

// relayRow is an outbox row as the relay reads it.
type relayRow struct {
	id, aggType, aggID, evType, payload string
	createdAt                           time.Time
}

func (b *testBundle) outboxRows(t *testing.T) []relayRow {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT event_id::text, aggregate_type, aggregate_id, event_type,
		payload::text, created_at FROM outbox_event ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []relayRow
	for rows.Next() {
		var r relayRow
		if err := rows.Scan(&r.id, &r.aggType, &r.aggID, &r.evType, &r.payload, &r.createdAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// publish produces rows the way the relay does: key = aggregate_id, value =
// payload, the relay's headers (wire.Meta), topic <prefix> + the relay's default
// template.
func publish(t *testing.T, k *testenv.Kafka, rows []relayRow) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, len(rows))
	for i, r := range rows {
		recs[i] = &kgo.Record{
			Topic: k.Prefix + wire.Topic(wire.DefaultTopicTemplate, r.aggType, r.evType),
			Key:   []byte(r.aggID),
			Value: []byte(r.payload),
		}
		meta := wire.Meta{EventID: r.id, EventType: r.evType, AggregateType: r.aggType, AggregateID: r.aggID, CreatedAt: r.createdAt}
		for _, h := range meta.Headers() {
			recs[i].Headers = append(recs[i].Headers, kgo.RecordHeader(h))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
}

func TestConsumerAppliesEachEventOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order", "outbox.payment")

	b.steps(t, 400)
	rows := b.outboxRows(t)
	half := len(rows) / 2

	consumer, err := demo.NewConsumer(b.pool, b.counters, demo.ConsumerConfig{
		Brokers: k.Brokers,
		Group:   k.Prefix + "demo",
		Topics:  "^" + regexp.QuoteMeta(k.Prefix) + `outbox\.`,
	})
	if err != nil {
		t.Fatal(err)
	}
	// A consumer that stops on its own ends the wait at once.
	running, consumerStopped := context.WithCancel(context.Background())
	defer consumerStopped()
	run := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := consumer.Run(ctx); err != nil {
				t.Errorf("consumer: %v", err)
			}
			if ctx.Err() == nil {
				consumerStopped()
			}
		}()
		return func() { cancel(); <-done }
	}
	waitFor := func(what string, cond func(demo.Stats) bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(running, 90*time.Second)
		defer cancel()
		if err := b.counters.WaitFor(ctx, cond); err != nil {
			t.Fatalf("waiting for %s: %v; counters %+v", what, err, b.counters.Snapshot())
		}
	}

	// The first half, once, then the consumer stops (offsets committed).
	publish(t, k, rows[:half])
	stop := run()
	waitFor("the first half", func(s demo.Stats) bool { return s.Applied == int64(half) })
	stop()

	// The rest, then every event of the first half again (a relay that
	// published and crashed before its mark), and a record without an event_id.
	publish(t, k, rows[half:])
	publish(t, k, rows[:half])
	bad := &kgo.Record{Topic: k.Prefix + "outbox.order", Key: []byte("o-x"), Value: []byte(`{}`)}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(context.Background(), bad).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	stop = run()
	// Duplicates may exceed half: at least once means the first consumer's
	// last batch may come again too.
	waitFor("every record", func(s demo.Stats) bool {
		return s.Applied >= int64(len(rows)) && s.Duplicates >= int64(half) && s.Invalid >= 1
	})
	stop()

	s := b.counters.Snapshot()
	if s.Applied != int64(len(rows)) || s.Invalid != 1 {
		t.Errorf("applied %d (want %d), invalid %d (want 1)", s.Applied, len(rows), s.Invalid)
	}
	if s.ConsumeErrors != 0 {
		t.Errorf("%d failed applies", s.ConsumeErrors)
	}
	if n := b.scalar(t, `SELECT count(*) FROM consumed_event WHERE consumer_name = 'demo-projection'`); n != int64(len(rows)) {
		t.Errorf("%d inbox rows, want %d", n, len(rows))
	}
	r, err := demo.Verify(context.Background(), b.pool, "")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Settled() || r.Orders == 0 || r.Payments == 0 {
		t.Errorf("projection not exactly the orders: %s", r)
	}
}

func TestVerifyNoticesADoubleApply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.steps(t, 50)
	r, err := demo.Verify(ctx, b.pool, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Settled() || r.OrdersBehind != r.Orders {
		t.Errorf("nothing consumed yet, but %s", r)
	}
	// Project every order as if each event had been applied twice.
	if _, err := b.pool.Exec(ctx, `INSERT INTO outboxtop_demo.order_projection
		(order_id, status, version, events_applied, last_event_type)
		SELECT order_id, status, version, 2 * version, 'x' FROM outboxtop_demo.orders`); err != nil {
		t.Fatal(err)
	}
	if r, err = demo.Verify(ctx, b.pool, ""); err != nil {
		t.Fatal(err)
	}
	if r.Settled() || r.OverApplied != r.Orders {
		t.Errorf("double applies not noticed: %s", r)
	}
}

func TestOrdersWriteToConfiguredSchemas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testenv.Pool(t)
	if err := demo.Migrate(ctx, pool, "shop"); err != nil {
		t.Fatal(err)
	}
	counters := &demo.Counters{}
	o, err := demo.NewOrders(pool, counters, demo.OrderConfig{Schema: "shop", Outbox: outbox.Writer{Schema: "public"}, HotOrders: -1})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := o.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var orders int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM shop.orders`).Scan(&orders); err != nil {
		t.Fatal(err)
	}
	if orders == 0 || len(o.HotOrders()) != 0 {
		t.Errorf("%d orders in shop, hot orders %v", orders, o.HotOrders())
	}
	var payload json.RawMessage
	if err := pool.QueryRow(ctx, `SELECT payload FROM outbox_event ORDER BY seq LIMIT 1`).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	var ev struct {
		OrderID string `json:"order_id"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil || ev.OrderID == "" {
		t.Errorf("payload %s: %v", payload, err)
	}
	if _, err := demo.NewOrders(pool, counters, demo.OrderConfig{Rate: -1}); err == nil {
		t.Errorf("negative rate accepted")
	}
}
