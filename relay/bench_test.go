package relay

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/pgtemp"
	"github.com/outboxtop/outboxtop/migrations"
)

// BenchmarkDrain drains a 200,000-event backlog (256-byte payloads, 5,000
// aggregates) through kfake, beside two references measured in the same run on
// the same database server: the SQL-only ceiling (the relay's own claim and mark
// statements, no broker, same batch size, best of 1–4 loops) and the seed's
// one-at-a-time relay (claim one, publish one, mark one; run for 10 s).
// PostgreSQL runs with fsync on, as in production.
//
//	go test ./relay -run '^$' -bench Drain -benchtime 1x -timeout 30m
//
// OUTBOXTOP_BENCH_EVENTS overrides the backlog size.
func BenchmarkDrain(b *testing.B) {
	events := 200_000
	if v := os.Getenv("OUTBOXTOP_BENCH_EVENTS"); v != "" {
		fmt.Sscan(v, &events)
	}
	env := newBenchEnv(b, events)
	for _, mode := range []Ordering{OrderAggregate, OrderNone} {
		b.Run(fmt.Sprintf("ceiling/%s", mode), func(b *testing.B) {
			best := 0.0
			for loops := 1; loops <= 4; loops++ {
				pool := env.fresh(b)
				rate := env.ceiling(b, pool, mode, loops)
				b.Logf("ceiling %s loops=%d: %.0f events/s", mode, loops, rate)
				best = max(best, rate)
				pool.Close()
			}
			b.ReportMetric(best, "events/s")
		})
		b.Run(fmt.Sprintf("relay/%s", mode), func(b *testing.B) {
			pool := env.fresh(b)
			defer pool.Close()
			b.ReportMetric(env.relay(b, pool, mode), "events/s")
		})
	}
	b.Run("seed-one-at-a-time", func(b *testing.B) {
		pool := env.fresh(b)
		defer pool.Close()
		b.ReportMetric(env.seed(b, pool, 10*time.Second), "events/s")
	})
}

type benchEnv struct {
	admin    string
	template string
	events   int
	kafka    *kfake.Cluster
	n        atomic.Int64
	cluster  *pgtemp.Cluster
}

func newBenchEnv(b *testing.B, events int) *benchEnv {
	ctx := context.Background()
	env := &benchEnv{events: events, template: "bench_tmpl"}
	if url := os.Getenv("OUTBOXTOP_BENCH_DATABASE_URL"); url != "" {
		env.admin = url
	} else {
		c, err := pgtemp.Start(ctx, pgtemp.Options{Settings: map[string]string{"shared_buffers": "512MB", "max_wal_size": "4GB"}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		env.cluster = c
		env.admin = c.DSN("postgres")
	}
	conn, err := pgx.Connect(ctx, env.admin)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS bench_tmpl")
	if _, err := conn.Exec(ctx, "CREATE DATABASE bench_tmpl"); err != nil {
		b.Fatal(err)
	}
	tc, err := pgx.Connect(ctx, withDB(env.admin, env.template))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := migrations.Apply(ctx, tc, "public", nil); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := tc.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'o-' || (g % 5000), 'OrderPlaced',
		       jsonb_build_object('n', g, 'pad', repeat('x', 230))
		FROM generate_series(1, $1) g ORDER BY g`, events); err != nil {
		b.Fatal(err)
	}
	if _, err := tc.Exec(ctx, "VACUUM ANALYZE outbox_event"); err != nil {
		b.Fatal(err)
	}
	tc.Close(ctx)
	b.Logf("loaded %d events in %v", events, time.Since(start).Round(time.Millisecond))
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(6, "outbox.order"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(k.Close)
	env.kafka = k
	return env
}

// fresh clones the loaded template into a new database.
func (env *benchEnv) fresh(b *testing.B) *pgxpool.Pool {
	ctx := context.Background()
	name := fmt.Sprintf("bench_%d", env.n.Add(1))
	conn, err := pgx.Connect(ctx, env.admin)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE bench_tmpl"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		c, err := pgx.Connect(ctx, env.admin)
		if err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	pool, err := pgxpool.New(ctx, withDB(env.admin, name))
	if err != nil {
		b.Fatal(err)
	}
	return pool
}

func withDB(dsn, db string) string {
	cfg, _ := pgx.ParseConfig(dsn)
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, db)
}

func (env *benchEnv) client(b *testing.B) *kgo.Client {
	cl, err := NewKafkaClient(KafkaConfig{Brokers: env.kafka.ListenAddrs(), MaxBufferedRecords: 20_000})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	return cl
}

// ceiling is MeasureCeiling on a fresh copy of the backlog.
func (env *benchEnv) ceiling(b *testing.B, pool *pgxpool.Pool, mode Ordering, loops int) float64 {
	res, err := MeasureCeiling(context.Background(), pool, Config{Ordering: mode}, loops)
	if err != nil {
		b.Fatal(err)
	}
	if res.Events != env.events {
		b.Fatalf("ceiling marked %d of %d", res.Events, env.events)
	}
	return float64(res.Events) / res.Elapsed.Seconds()
}

func (env *benchEnv) relay(b *testing.B, pool *pgxpool.Pool, mode Ordering) float64 {
	inFlight := 0
	if v := os.Getenv("OUTBOXTOP_BENCH_IN_FLIGHT"); v != "" {
		fmt.Sscan(v, &inFlight)
	}
	r, err := New(pool, env.client(b), Config{Ordering: mode, Drain: true, InFlight: inFlight})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := r.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	if got := int(r.Status().Published); got != env.events {
		b.Fatalf("relay published %d of %d", got, env.events)
	}
	return float64(env.events) / elapsed.Seconds()
}

// seed is the seed's relay: claim one event, produce it synchronously, mark it.
func (env *benchEnv) seed(b *testing.B, pool *pgxpool.Pool, d time.Duration) float64 {
	ctx := context.Background()
	cl := env.client(b)
	r, err := New(pool, cl, Config{Ordering: OrderNone})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		token := uuid.New()
		events, err := r.claim(ctx, token, 1)
		if err != nil {
			b.Fatal(err)
		}
		if len(events) == 0 {
			break
		}
		e := events[0]
		rec, _ := r.record(e)
		res := cl.ProduceSync(ctx, rec)
		if err := res.FirstErr(); err != nil {
			b.Fatal(err)
		}
		if _, err := r.mark(ctx, token, []published{{e.id, rec.Topic, rec.Partition, rec.Offset}}); err != nil {
			b.Fatal(err)
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds()
}
