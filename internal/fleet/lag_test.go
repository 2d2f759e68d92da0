package fleet

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// stoppedHalfway produces n records stamped a minute ago to topic and lets
// group commit the first n/2: a consumer that stopped halfway.
func stoppedHalfway(t *testing.T, brokers []string, topic, group string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%d", i), Timestamp: time.Now().Add(-time.Minute)}
	}
	if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []*kgo.Record
	for len(got) < n/2 && ctx.Err() == nil {
		got = append(got, c.PollRecords(ctx, n/2-len(got)).Records()...)
	}
	if len(got) < n/2 {
		t.Fatalf("%s read %d of %d records", group, len(got), n/2)
	}
	if err := c.CommitRecords(ctx, got[:n/2]...); err != nil {
		t.Fatal(err)
	}
}

// publishedTo is a database whose one published event went to topic.
func publishedTo(t *testing.T, topic string) string {
	t.Helper()
	pool, dsn := testenv.Pool(t)
	if _, err := pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload,
		published_at, kafka_topic, kafka_partition, kafka_offset) VALUES (gen_random_uuid(), 'order', '1', 'OrderPlaced', '{}', now(), $1, 0, 0)`, topic); err != nil {
		t.Fatal(err)
	}
	return dsn
}

// silentBroker accepts connections and never answers: a check of its lag
// takes the whole lag timeout.
func silentBroker(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// lagFleet: "orders" whose group stopped halfway (10 of 20 records behind, a
// minute old), "billing" whose brokers are broker, "search" with no brokers.
func lagFleet(t *testing.T, broker string) *File {
	t.Helper()
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 2, "outbox.order")
	topic := k.Prefix + "outbox.order"
	stoppedHalfway(t, k.Brokers, topic, k.Prefix+"shipping", 20)
	text := fmt.Sprintf(`timeout = "2s"
lag_timeout = "4s"
[[outbox]]
name = "orders"
dsn_env = "ORDERS_DSN"
brokers = [%q]
groups = ["%sshipping"]
[[outbox]]
name = "billing"
dsn_env = "BILLING_DSN"
brokers = [%q]
[[outbox]]
name = "search"
dsn_env = "SEARCH_DSN"
`, k.Brokers[0], k.Prefix, broker)
	f, err := Parse(filepath.Join(t.TempDir(), "fleet.toml"), text, env("ORDERS_DSN", publishedTo(t, topic),
		"BILLING_DSN", publishedTo(t, "outbox.invoice"), "SEARCH_DSN", publishedTo(t, "outbox.search")))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func byName(rows []Row) map[string]Row {
	m := map[string]Row{}
	for _, r := range rows {
		m[r.Name] = r
	}
	return m
}

// A group that stopped halfway shows its lag and age in its outbox's row, and
// the lag thresholds apply per outbox; closed brokers are the row's problem
// and a WARNING only with lag thresholds, the database part still read.
func TestPollChecksEachOutboxsConsumerLag(t *testing.T) {
	t.Parallel()
	closed, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.ListenAddrs()[0]
	closed.Close()
	f := lagFleet(t, addr)
	for _, c := range []struct {
		th                  Thresholds
		orders, billing     Level
		ordersCrossedPrefix string
	}{
		{DefaultThresholds(), OK, OK, ""},
		{func() Thresholds { th := DefaultThresholds(); th.WarnLag, th.CritLag = 5, 100; return th }(), Warning, Warning, "lag "},
		{func() Thresholds { th := DefaultThresholds(); th.CritLagAge = 30 * time.Second; return th }(), Critical, Warning, "oldest unconsumed "},
	} {
		p, err := NewPoller(f, Config{Thresholds: &c.th})
		if err != nil {
			t.Fatal(err)
		}
		rows := byName(p.Poll(context.Background()))
		p.Close()
		o, b, s := rows["orders"], rows["billing"], rows["search"]
		if o.Lag == nil || o.Lag.MaxLag != 10 || !strings.HasSuffix(o.Lag.MaxLagGroup, "shipping") || o.Lag.Problem != "" ||
			o.Lag.OldestAge == nil || o.Lag.OldestAge.Duration() < 50*time.Second {
			t.Fatalf("orders' lag %+v", o.Lag)
		}
		if o.Level != c.orders || (c.ordersCrossedPrefix != "" && (len(o.Crossed) == 0 || !strings.HasPrefix(o.Crossed[0], c.ordersCrossedPrefix))) {
			t.Errorf("%+v: orders %s %q", c.th, o.Level, o.Crossed)
		}
		if !b.Reachable || b.Lag == nil || b.Lag.Problem == "" || b.Lag.MaxLagGroup != "" || b.Level != c.billing {
			t.Errorf("%+v: billing (closed brokers) %s reachable=%v lag %+v", c.th, b.Level, b.Reachable, b.Lag)
		}
		if c.billing == OK && !strings.HasPrefix(b.Condition(), "kafka: ") {
			t.Errorf("billing's condition %q, want the brokers' problem", b.Condition())
		}
		if !s.Reachable || s.Lag != nil || s.Level != OK {
			t.Errorf("search (no brokers) %+v", s)
		}
	}
}

// Brokers that never answer hold up neither their outbox's database row nor
// any other outbox: every database is polled while that lag check still waits.
func TestRunASilentBrokerDelaysNoDatabaseRow(t *testing.T) {
	t.Parallel()
	f := lagFleet(t, silentBroker(t))
	for k := range f.Outboxes {
		f.Outboxes[k].PollInterval = 100 * time.Millisecond
		f.Outboxes[k].LagTimeout = 30 * time.Second
	}
	p, err := NewPoller(f, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	testenv.WaitFor(t, 20*time.Second, "every database polled twice and orders' lag read", func() bool {
		rows := byName(p.Rows())
		for _, r := range rows {
			if !r.Reachable || r.RateIn == nil {
				return false
			}
		}
		return rows["orders"].Lag != nil
	})
	b := byName(p.Rows())["billing"]
	if b.Lag != nil {
		t.Fatalf("billing's lag check against a silent broker ended: %+v", b.Lag)
	}
	if b.Took.Duration() > 2*time.Second || b.Failed != 0 {
		t.Errorf("billing's database row %+v", b)
	}
	// Stopping does not wait for the silent broker's check to time out.
	stopped := time.Now()
	cancel()
	<-done
	if d := time.Since(stopped); d > 10*time.Second {
		t.Errorf("Run took %s to stop", d)
	}
}
