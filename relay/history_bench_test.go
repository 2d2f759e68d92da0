package relay

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/testenv"
)

// BenchmarkSettleFailingBatch is what the attempt history adds to a batch of
// 500 events that all failed: the settle alone, then the settle with its
// history rows (and the prune trigger), on the same database, whose history
// already holds 200,000 rows. A batch that is
// published whole does neither: it marks, and writeHistory returns at once.
//
//	go test ./relay -run '^$' -bench SettleFailingBatch -benchtime 400x
func BenchmarkSettleFailingBatch(b *testing.B) {
	pool, _ := testenv.Pool(b)
	k := testenv.NewKafka(b)
	cl, err := NewKafkaClient(KafkaConfig{Brokers: k.Brokers})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	r, err := New(pool, cl, Config{TopicTemplate: "outbox.{aggregate_type}"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// A history that has seen a storm: 200,000 rows of other events. The
	// prune must not read them.
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_attempt (event_id, attempt, class, outcome, error)
		SELECT gen_random_uuid(), 1, 'retriable', 'schedule', repeat('x', 100) FROM generate_series(1, 200000);
		ANALYZE outbox_attempt`); err != nil {
		b.Fatal(err)
	}
	const batch = 500
	// lease leases a new batch of events, as a claim would, and returns its
	// settlements: all failed retriably, scheduled again.
	lease := func() (uuid.UUID, []settlement) {
		token := uuid.New()
		rows, err := pool.Query(ctx, `WITH ins AS (
				INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, lease_token, lease_until, attempts)
				SELECT gen_random_uuid(), 'order', 'o-' || g, 'OrderPlaced', '{"n": 1}', $1, now() + interval '1 minute', 1
				FROM generate_series(1, $2) g RETURNING event_id)
			SELECT event_id FROM ins`, token, batch)
		if err != nil {
			b.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			b.Fatal(err)
		}
		msg := "kafka: NOT_ENOUGH_REPLICAS: Messages are rejected since there are fewer in-sync replicas than required."
		s := make([]settlement, len(ids))
		for k, id := range ids {
			s[k] = settlement{id: id, delay: time.Hour, err: &msg, attempt: 1, class: "retriable", code: 19}
		}
		return token, s
	}
	for _, withHistory := range []bool{false, true} {
		name := "settle"
		if withHistory {
			name = "settle+history"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				token, s := lease()
				b.StartTimer()
				if n, err := r.settle(ctx, token, s); err != nil || n != batch {
					b.Fatalf("settled %d of %d: %v", n, batch, err)
				}
				if withHistory {
					r.writeHistory(ctx, s)
				}
			}
		})
	}
	// The same 500 events tried again and again, as events waiting for a
	// missing topic are: every try adds a history row and, past 20, prunes
	// one. With a transaction holding the xmin horizon the pruned rows stay,
	// dead, in the primary key the prune walks: ms/last-op is the last try's
	// cost, which grows with the tries made while the horizon is held.
	_, fixed := lease()
	for _, held := range []bool{false, true} {
		name := "history-again"
		if held {
			name = "history-again-horizon-held"
		}
		b.Run(name, func(b *testing.B) {
			if held {
				tx, err := pool.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				defer tx.Rollback(ctx)
				if _, err := tx.Exec(ctx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
					b.Fatal(err)
				}
				if _, err := tx.Exec(ctx, "SELECT count(*) FROM outbox_relay"); err != nil {
					b.Fatal(err)
				}
			}
			var last time.Duration
			for b.Loop() {
				start := time.Now()
				r.writeHistory(ctx, fixed)
				last = time.Since(start)
			}
			b.ReportMetric(float64(last.Microseconds())/1000, "ms/last-op")
		})
	}
}
