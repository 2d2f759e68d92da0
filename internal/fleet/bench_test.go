package fleet

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// BenchmarkFleet20 polls 20 outboxes on one PostgreSQL server, each with 1,000
// pending and 10 failed events: the refresh cost of a fleet of twenty. In
// "one-hanging", a session holds outbox 0's table locked while it sleeps: the
// poll then takes that outbox's timeout, and the metrics say whether the 19
// others paid for it. Numbers belong in BENCHMARKS.md, measured on a quiet
// machine:
//
//	go test ./internal/fleet -run XXX -bench Fleet20 -benchtime 20x
//
// Metrics: ms/poll (wall time of one poll of all 20), db-ms/poll (the sum of the
// outboxes' own poll times: the database time the fleet costs per refresh), and
// max-healthy-ms (the slowest outbox that was not hung).
func BenchmarkFleet20(b *testing.B) {
	const n = 20
	ctx := context.Background()
	env := map[string]string{}
	var text strings.Builder
	text.WriteString("timeout = \"1s\"\n")
	var first *pgxpool.Pool
	for k := range n {
		dsn := testenv.DB(b)
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			SELECT gen_random_uuid(), 'order', (g % 200)::text, 'OrderPlaced', '{}' FROM generate_series(1, 1000) g;
			INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, attempts, failed_at, last_error)
			SELECT gen_random_uuid(), 'invoice', g::text, 'InvoiceIssued', '{}', 5, now(), 'boom' FROM generate_series(1, 10) g;
			ANALYZE outbox_event`); err != nil {
			b.Fatal(err)
		}
		if k == 0 {
			first = pool
		}
		env[fmt.Sprintf("DSN_%d", k)] = dsn
		fmt.Fprintf(&text, "[[outbox]]\nname = \"o%02d\"\ndsn_env = \"DSN_%d\"\n", k, k)
	}
	f, err := Parse(filepath.Join(b.TempDir(), "fleet.toml"), text.String(), func(k string) string { return env[k] })
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B) {
		p, err := NewPoller(f, Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		p.Poll(ctx) // connect
		var db, healthy time.Duration
		start := time.Now()
		for b.Loop() {
			for _, r := range p.Poll(ctx) {
				db += r.Took.Duration()
				if r.Reachable {
					healthy = max(healthy, r.Took.Duration())
				}
			}
		}
		b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/poll")
		b.ReportMetric(float64(db.Milliseconds())/float64(b.N), "db-ms/poll")
		b.ReportMetric(float64(healthy.Milliseconds()), "max-healthy-ms")
	}
	b.Run("all-healthy", run)
	b.Run("one-hanging", func(b *testing.B) {
		hctx, cancel := context.WithCancel(ctx)
		holder, err := first.Acquire(hctx)
		if err != nil {
			b.Fatal(err)
		}
		held := make(chan struct{})
		go func() {
			defer close(held)
			_, _ = holder.Exec(hctx, `BEGIN; LOCK TABLE outbox_event IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3600); COMMIT`)
		}()
		defer func() { cancel(); <-held; holder.Release() }()
		testenv.WaitFor(b, 10*time.Second, "the lock to be held", func() bool {
			var locked bool
			err := first.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
				WHERE c.relname = 'outbox_event' AND l.mode = 'AccessExclusiveLock' AND l.granted)`).Scan(&locked)
			return err == nil && locked
		})
		run(b)
	})
}
