package demo_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/demo"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/relay"
)

// The whole demo without a terminal, with a relay batch killed after Kafka's
// ack and a broker outage during the run: everything committed is published
// and applied exactly once, and the inbox absorbed the killed batch's
// re-publication.
func TestHeadlessRunWithFaults(t *testing.T) {
	t.Parallel()
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order", "outbox.payment")
	rcfg := relay.Config{
		TopicTemplate:  k.Prefix + "outbox.{aggregate_type}",
		Lease:          2 * time.Second,
		PublishTimeout: time.Second,
		BackoffBase:    100 * time.Millisecond,
		BackoffMax:     time.Second,
		PollInterval:   100 * time.Millisecond,
	}
	d, err := demo.Start(context.Background(), demo.Config{
		DSN:           testenv.DB(t),
		Brokers:       k.Brokers,
		TopicTemplate: rcfg.TopicTemplate,
		Group:         k.Prefix + "demo",
		Rate:          300,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	t.Cleanup(attach(t, d, rcfg))

	var progress strings.Builder
	s, err := d.RunHeadless(context.Background(), demo.HeadlessConfig{
		Duration: 10 * time.Second, Faults: true, SettleTimeout: 40 * time.Second,
		Progress: &progress, ProgressEvery: time.Second,
	})
	t.Logf("progress:\n%s", progress.String())
	if err != nil {
		t.Fatal(err)
	}
	var sum strings.Builder
	s.Print(&sum)
	t.Logf("summary:\n%s", sum.String())

	if !s.Settled() {
		t.Errorf("not settled")
	}
	if s.Committed < 500 || s.Published != s.Committed || s.Applied != s.Committed {
		t.Errorf("committed %d, published %d, applied %d: want equal and ≥ 500", s.Committed, s.Published, s.Applied)
	}
	if s.Kills != 1 || s.Duplicates == 0 {
		t.Errorf("%d kills, %d duplicates absorbed: want the killed batch's events redelivered and absorbed", s.Kills, s.Duplicates)
	}
	// Every acknowledged record reached the consumer. Kafka may hold more than the
	// relay saw acknowledged: a request cut by the outage can be written although
	// its records were cancelled and published again (at least once); those extra
	// copies arrive as duplicates too.
	if s.Applied+s.Duplicates < s.Produced {
		t.Errorf("Kafka acknowledged %d records; the consumer applied only %d and absorbed %d", s.Produced, s.Applied, s.Duplicates)
	}
	if s.Dead != 0 || s.Invalid != 0 {
		t.Errorf("%d dead events, %d invalid records", s.Dead, s.Invalid)
	}
	for _, want := range []string{"fault: killing", "fault: broker outage on", "fault: broker outage off"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress does not mention %q", want)
		}
	}
	// The outage reached the relay: it saw Kafka unreachable, and recovered.
	// Its last error is the latest trouble: the outage, or an event tried
	// again after it.
	st := d.Relay.Status()
	if st.Outages < 1 || !st.BrokerReachable || st.LastError == "" {
		t.Errorf("relay status after the outage: %d outages, reachable %v, last error %q", st.Outages, st.BrokerReachable, st.LastError)
	}

	// Each effect exactly once: one inbox row per event, no projection row
	// counted twice (payment_projection's key would refuse a second apply).
	ctx := context.Background()
	var inboxRows, events int64
	if err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM public.consumed_event WHERE consumer_name = 'demo-projection'`).Scan(&inboxRows); err != nil {
		t.Fatal(err)
	}
	if err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM public.outbox_event WHERE published_at IS NOT NULL`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if inboxRows != s.Committed || events != s.Committed {
		t.Errorf("%d inbox rows and %d published events for %d committed", inboxRows, events, s.Committed)
	}
	if r := s.Report; r.OverApplied != 0 || r.OutOfOrder != 0 || r.AppliedOrderEvents+r.AppliedPayments != s.Committed {
		t.Errorf("projection: %s; want %d effects, none twice, none out of order", r, s.Committed)
	}
}

// Cancelling a run — what ctrl+c does through the command's context — stops
// everything and leaves neither a PostgreSQL process nor its directory.
func TestCancelledRunLeavesNothingBehind(t *testing.T) {
	if testenv.Cluster(t) == nil {
		t.Skip("needs the local PostgreSQL binaries (OUTBOXTOP_TEST_DATABASE_URL is set)")
	}
	t.Parallel()
	d, err := demo.Start(context.Background(), demo.Config{Rate: 200})
	if err != nil {
		t.Fatal(err)
	}
	dir := d.ClusterDir()
	pid := testenv.ServerPID(t, dir)
	stopRelay := attach(t, d, relay.Config{})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := d.RunHeadless(ctx, demo.HeadlessConfig{Duration: time.Hour})
		done <- err
	}()
	wait, cancelWait := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelWait()
	if err := d.Counters.WaitFor(wait, func(s demo.Stats) bool { return s.Applied > 50 }); err != nil {
		t.Fatalf("demo did not get going: %v (%+v)", err, d.Counters.Snapshot())
	}
	cancel()
	if err := <-done; !errors.Is(err, demo.ErrInterrupted) {
		t.Errorf("RunHeadless = %v, want ErrInterrupted", err)
	}
	stopRelay()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	testenv.ClusterGone(t, dir, pid)
}

// attach opens a relay on the demo's environment, as the command's lifecycle
// does, attaches it and runs it; the returned func stops the relay and
// releases its client and pool.
func attach(t *testing.T, d *demo.Demo, cfg relay.Config) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pool, err := d.Connect(ctx, int32(cfg.WithDefaults().InFlight)+demo.Conns+2)
	if err != nil {
		t.Fatal(err)
	}
	client, err := relay.NewKafkaClient(d.RelayKafka(cfg.Kafka(relay.KafkaConfig{})))
	if err != nil {
		t.Fatal(err)
	}
	r, err := relay.New(pool, client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Attach(pool, r); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("relay: %v", err)
		}
		client.Close()
		pool.Close()
	}
}
