package relay

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SQLCeiling measures what the database allows the relay: loops goroutines run
// the relay's own claim and mark statements (cfg's ordering and batch size) with
// no broker in between, until nothing is claimable. It marks events published
// with made-up Kafka coordinates, so run it only on a copy of an outbox. It
// returns how many events it marked and how long that took.
func SQLCeiling(ctx context.Context, pool *pgxpool.Pool, cfg Config, loops int) (int, time.Duration, error) {
	r, err := New(pool, nil, cfg)
	if err != nil {
		return 0, 0, err
	}
	var total atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	start := time.Now()
	for i := 0; i < loops; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// In ordered mode another loop's batch may be all that blocks this one:
			// give up only after a few empty claims in a row.
			for empty := 0; empty < 3 && ctx.Err() == nil; {
				token := uuid.New()
				events, err := r.claim(ctx, token, r.cfg.BatchSize)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				if len(events) == 0 {
					empty++
					sleep(ctx, time.Millisecond)
					continue
				}
				empty = 0
				acked := make([]published, len(events))
				for j, e := range events {
					acked[j] = published{e.id, "ceiling", 0, int64(j)}
				}
				n, err := r.mark(ctx, token, acked)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				total.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	return int(total.Load()), time.Since(start), firstErr
}
