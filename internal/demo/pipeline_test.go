package demo_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/demo"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/relay"
)

// The demo's pieces with the relay between them: every event the order
// service commits is applied once, in order, by the consumer.
func TestPipelineThroughRelay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order", "outbox.payment")

	client, err := relay.NewKafkaClient(relay.KafkaConfig{Brokers: k.Brokers})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	rl, err := relay.New(b.pool, client, relay.Config{TopicTemplate: k.Prefix + "outbox.{aggregate_type}", PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	consumer, err := demo.NewConsumer(b.pool, b.counters, demo.ConsumerConfig{
		Brokers: k.Brokers,
		Group:   k.Prefix + "demo",
		Topics:  "^" + regexp.QuoteMeta(k.Prefix) + `outbox\.`,
	})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		who string
		err error
	}
	done := make(chan result, 3)
	go func() { done <- result{"relay", rl.Run(ctx)} }()
	go func() { done <- result{"consumer", consumer.Run(ctx)} }()

	ordersCtx, stopOrders := context.WithCancel(ctx)
	b.orders.SetRate(2000)
	go func() { done <- result{"orders", b.orders.Run(ordersCtx)} }()

	wait, cancelWait := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelWait()
	if err := b.counters.WaitFor(wait, func(s demo.Stats) bool { return s.Committed >= 1500 }); err != nil {
		t.Fatalf("order service: %v, %+v", err, b.counters.Snapshot())
	}
	stopOrders()
	if r := <-done; r.who != "orders" || r.err != nil {
		t.Fatalf("%s stopped first: %v", r.who, r.err)
	}
	committed := b.counters.Snapshot().Committed
	if err := b.counters.WaitFor(wait, func(s demo.Stats) bool { return s.Applied >= committed }); err != nil {
		t.Fatalf("consumer applied %d of %d: %v", b.counters.Snapshot().Applied, committed, err)
	}
	cancel()
	for range 2 {
		if r := <-done; r.err != nil {
			t.Errorf("%s: %v", r.who, r.err)
		}
	}

	s := b.counters.Snapshot()
	if s.Applied != committed || s.Invalid != 0 {
		t.Errorf("applied %d of %d committed, %d invalid", s.Applied, committed, s.Invalid)
	}
	r, err := demo.Verify(context.Background(), b.pool, "")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Settled() {
		t.Errorf("not settled: %s", r)
	}
	if pub := b.scalar(t, `SELECT count(*) FROM outbox_event WHERE published_at IS NOT NULL`); pub != committed {
		t.Errorf("%d published of %d committed", pub, committed)
	}
}
