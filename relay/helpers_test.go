package relay

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

func TestMain(m *testing.M) { testenv.MainLeakChecked(m) }

type bundle struct {
	pool  *pgxpool.Pool
	kafka *testenv.Kafka
	net   *switchboard
	topic string // full name of the test's topic for aggregate_type "order"
}

func setup(t *testing.T) *bundle {
	t.Helper()
	pool, _ := testenv.Pool(t)
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 3, "outbox.order")
	return &bundle{pool: pool, kafka: k, net: &switchboard{}, topic: k.Prefix + "outbox.order"}
}

// config is a relay config for the test's topics with quick timings.
func (b *bundle) config() Config {
	return Config{
		TopicTemplate:   b.kafka.Prefix + "outbox.{aggregate_type}",
		BackoffBase:     50 * time.Millisecond,
		BackoffMax:      200 * time.Millisecond,
		PollInterval:    50 * time.Millisecond,
		ShutdownTimeout: 5 * time.Second,
		Logger:          testLogger(),
	}
}

func testLogger() *slog.Logger {
	if os.Getenv("OUTBOXTOP_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func (b *bundle) client(t *testing.T, kc KafkaConfig) *kgo.Client {
	t.Helper()
	kc.Brokers = b.kafka.Brokers
	if kc.DeliveryTimeout == 0 {
		kc.DeliveryTimeout = 2 * time.Second
	}
	kc.Extra = append(kc.Extra, kgo.Dialer(b.net.dial))
	cl, err := NewKafkaClient(kc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func (b *bundle) relay(t *testing.T, cfg Config) *Relay {
	t.Helper()
	r, err := New(b.pool, b.client(t, KafkaConfig{MaxMessageBytes: cfg.MaxMessageBytes}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// inspector is an Inspector on the test's database, as an operator's console has.
func (b *bundle) inspector(t *testing.T) *inspect.Inspector {
	t.Helper()
	ins, err := inspect.New(b.pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	return ins
}

// backendAlive says whether the server still has the session of backend pid.
func (b *bundle) backendAlive(t *testing.T, pid int32) bool {
	t.Helper()
	var alive bool
	if err := b.pool.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)", pid).Scan(&alive); err != nil {
		t.Fatal(err)
	}
	return alive
}

// start runs r until the returned stop is called (or the test ends).
func start(t *testing.T, r *Relay) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-errc })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// insertSeed inserts n events with only the seed's columns: aggregate i%aggs.
func (b *bundle) insertSeed(t *testing.T, n, aggs int, aggPrefix string) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', $3 || (g % $2), 'OrderPlaced', jsonb_build_object('n', g, 'pad', repeat('x', 200))
		FROM generate_series(1, $1) g ORDER BY g`, n, aggs, aggPrefix)
	if err != nil {
		t.Fatal(err)
	}
}

func (b *bundle) count(t *testing.T, where string) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), "SELECT count(*) FROM outbox_event WHERE "+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// delivered reads want records from topic and returns them in partition/offset order
// with each record's event id.
func (b *bundle) delivered(t *testing.T, want int, topics ...string) []*kgo.Record {
	t.Helper()
	recs := b.kafka.Consume(t, want, 60*time.Second, topics...)
	if len(recs) < want {
		t.Fatalf("consumed %d records, want %d", len(recs), want)
	}
	return recs
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// seqs maps event ids to seq and aggregate.
func (b *bundle) seqs(t *testing.T) map[string]struct {
	seq int64
	agg string
} {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT event_id, seq, aggregate_id FROM outbox_event`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]struct {
		seq int64
		agg string
	}{}
	for rows.Next() {
		var id uuid.UUID
		var seq int64
		var agg string
		if err := rows.Scan(&id, &seq, &agg); err != nil {
			t.Fatal(err)
		}
		out[id.String()] = struct {
			seq int64
			agg string
		}{seq, agg}
	}
	return out
}

// switchboard is a dialer the tests can cut: a broker outage without stopping
// the broker, for kfake and a real cluster alike.
type switchboard struct {
	mu    sync.Mutex
	down  bool
	conns []net.Conn
	delay atomic.Int64 // added to the next write, in nanoseconds
	// refused counts dials turned away during an outage: the relay's attempts
	// to reach Kafka, which a test can wait on.
	refused atomic.Int64
}

// slowNextWrite makes the next write to Kafka, on any connection, take d longer.
func (s *switchboard) slowNextWrite(d time.Duration) { s.delay.Store(int64(d)) }

// slowConn applies the switchboard's one-shot write delay.
type slowConn struct {
	net.Conn
	s *switchboard
}

func (c slowConn) Write(p []byte) (int, error) {
	if d := c.s.delay.Swap(0); d > 0 {
		time.Sleep(time.Duration(d))
	}
	return c.Conn.Write(p)
}

func (s *switchboard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		s.refused.Add(1)
		return nil, fmt.Errorf("dial %s: connection refused (test outage)", addr)
	}
	c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	s.conns = append(s.conns, c)
	return slowConn{c, s}, nil
}

func (s *switchboard) cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = true
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
}

func (s *switchboard) restore() {
	s.mu.Lock()
	s.down = false
	s.mu.Unlock()
}
