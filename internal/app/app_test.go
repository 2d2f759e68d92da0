package app

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/housekeeping"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/relay"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testBundle is a migrated database of the test's own, a Kafka, and the
// Config of an application on them.
type testBundle struct {
	pool *pgxpool.Pool
	k    *testenv.Kafka
	cfg  Config
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool, dsn := testenv.Pool(t)
	k := testenv.NewKafka(t)
	k.CreateTopics(t, 1, "outbox.order")
	rcfg := relay.DefaultConfig
	rcfg.TopicTemplate = k.Prefix + "outbox.{aggregate_type}"
	rcfg.ShutdownTimeout = 5 * time.Second
	kcfg := rcfg.Kafka(relay.KafkaConfig{Brokers: k.Brokers})
	return &testBundle{pool: pool, k: k, cfg: Config{
		Schema: "public",
		Connect: func(ctx context.Context, maxConns int32) (*pgxpool.Pool, error) {
			cfg, err := pgxpool.ParseConfig(dsn)
			if err != nil {
				return nil, err
			}
			cfg.MaxConns = maxConns
			return pgxpool.NewWithConfig(ctx, cfg)
		},
		Conns: 2, Relay: &rcfg, Kafka: kcfg,
	}}
}

func (b *testBundle) insert(t *testing.T, n int, published time.Duration) {
	t.Helper()
	sql := `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'o-' || g, 'OrderPlaced', '{}' FROM generate_series(1, $1) g`
	args := []any{n}
	if published > 0 {
		sql = `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, published_at)
			SELECT gen_random_uuid(), 'order', 'old-' || g, 'OrderPlaced', '{}', now() - $2::interval FROM generate_series(1, $1) g`
		args = append(args, published.String())
	}
	if _, err := b.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

func (b *testBundle) count(t *testing.T, sql string) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func get(t *testing.T, a *App, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + a.MetricsAddr().String() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// The headless shape: no front, --drain: Run returns when the relay has
// published everything; the housekeeping and /metrics ran beside it.
func TestRunWithoutFrontDrainsWithHousekeepingAndMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insert(t, 50, 0)
	b.insert(t, 5, 2*time.Hour)
	b.cfg.Relay.Drain = true
	b.cfg.Housekeeping = housekeeping.Config{ArchiveAfter: time.Hour, Every: time.Second}
	b.cfg.MetricsAddr = "127.0.0.1:0"
	a, err := Open(context.Background(), b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if code, body := get(t, a, "/readyz"); code != http.StatusOK && !strings.Contains(body, "kafka unreachable") {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	if err := a.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM outbox_event WHERE published_at IS NULL`); n != 0 {
		t.Fatalf("%d events left unpublished after the drain", n)
	}
	_, metrics := get(t, a, "/metrics")
	for _, want := range []string{"outboxtop_relay_published_total 50", "outboxtop_housekeeping_rounds_total", "outboxtop_backlog_events"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// The console's shape: the front's context ends when the relay fails, and the
// relay's error is Run's.
func TestRelayFailureEndsTheFront(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.Relay.Drain = true // a draining relay gives up on a database that keeps failing
	a, err := Open(context.Background(), b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// The relay's table vanishes under it: its claims fail.
	if _, err := b.pool.Exec(context.Background(), `ALTER TABLE outbox_event RENAME TO gone`); err != nil {
		t.Fatal(err)
	}
	err = a.Run(context.Background(), func(ctx context.Context) error {
		<-ctx.Done()
		return errors.New("front saw the end")
	})
	if !errors.Is(err, relay.ErrStopped) {
		t.Fatalf("Run: %v, want the relay's error", err)
	}
}

// A front that returns ends Run, and the relay and housekeeping with it.
func TestFrontReturningStopsTheRest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.Housekeeping = housekeeping.Config{Retention: time.Hour, Every: time.Second}
	a, err := Open(context.Background(), b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b.insert(t, 10, 0)
	done := errors.New("quit")
	err = a.Run(context.Background(), func(ctx context.Context) error {
		testenv.WaitFor(t, 30*time.Second, "the relay published", func() bool { return a.Relay.Status().Published == 10 })
		return done
	})
	if !errors.Is(err, done) {
		t.Fatalf("Run: %v, want the front's error", err)
	}
	if a.Relay.Status().InFlight != 0 {
		t.Fatal("Run returned with batches in flight")
	}
}

func TestOpenRefusesWhatItCannotHonour(t *testing.T) {
	t.Parallel()
	b := setup(t)
	noRelay := b.cfg
	noRelay.Relay = nil
	noRelay.Housekeeping = housekeeping.Config{ArchiveAfter: time.Hour, Every: time.Minute}
	badEvery := b.cfg
	badEvery.Housekeeping = housekeeping.Config{ArchiveAfter: time.Hour, Every: time.Millisecond}
	badAddr := b.cfg
	badAddr.MetricsAddr = "127.0.0.1:bogus"
	for name, cfg := range map[string]Config{"housekeeping without relay": noRelay, "retention interval": badEvery, "metrics address": badAddr} {
		a, err := Open(context.Background(), cfg)
		var ce ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "--") {
			t.Errorf("%s: %v, want a ConfigError naming the flag", name, err)
		}
		if a != nil {
			a.Close()
		}
	}
	// Unmigrated: a runtime failure naming the fix.
	empty := testenv.EmptyDB(t)
	cfg := b.cfg
	cfg.Connect = func(ctx context.Context, _ int32) (*pgxpool.Pool, error) { return pgxpool.New(ctx, empty) }
	if _, err := Open(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "outboxtop migrate") || errors.As(err, new(ConfigError)) {
		t.Fatalf("unmigrated schema: %v", err)
	}
}

// Without a relay the application watches: /readyz asks only the database,
// /metrics has the relay gauges, and a read-only application's inspector
// refuses actions.
func TestWatchOnlyReadOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.cfg.Relay = nil
	b.cfg.ReadOnly = true
	b.cfg.MetricsAddr = "127.0.0.1:0"
	a, err := Open(context.Background(), b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Relay != nil || !a.Inspector.IsReadOnly() || !a.ReadOnlyInspector.IsReadOnly() {
		t.Fatalf("relay %v, read-only %v", a.Relay, a.Inspector.IsReadOnly())
	}
	if code, body := get(t, a, "/readyz"); code != http.StatusOK || !strings.HasPrefix(body, "ready") {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	// A watcher exports what the outbox says of its relays: none ever seen.
	_, metrics := get(t, a, "/metrics")
	for _, want := range []string{"outboxtop_relays_live 0\n", "outboxtop_relays_seen 0\n", "outboxtop_no_relay_seconds NaN\n"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	err = a.Run(ctx, func(ctx context.Context) error { cancel(); <-ctx.Done(); return nil })
	if err != nil {
		t.Fatal(err)
	}
}
