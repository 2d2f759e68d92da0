package relay

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/relayceiling"
)

func init() {
	relayceiling.Measure = func(ctx context.Context, pool *pgxpool.Pool, cfg any, loops int) (relayceiling.Result, error) {
		return sqlCeiling(ctx, pool, cfg.(Config), loops)
	}
}

// sqlCeiling is relayceiling.Measure: loops goroutines claim and mark, with no
// broker, until nothing is claimable.
func sqlCeiling(ctx context.Context, pool *pgxpool.Pool, cfg Config, loops int) (relayceiling.Result, error) {
	r, err := New(pool, nil, cfg)
	if err != nil {
		return relayceiling.Result{}, err
	}
	var mu sync.Mutex
	var claims []time.Duration
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
				began := time.Now()
				events, err := r.claim(ctx, token, r.cfg.BatchSize)
				took := time.Since(began)
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
				mu.Lock()
				claims = append(claims, took)
				mu.Unlock()
				acked := make([]published, len(events))
				for j, e := range events {
					acked[j] = published{e.id, "ceiling", 0, int64(j)}
				}
				n, err := r.mark(ctx, token, acked)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				total.Add(int64(n.marked))
			}
		}()
	}
	wg.Wait()
	return relayceiling.Result{Events: int(total.Load()), Elapsed: time.Since(start), Claims: claims}, firstErr
}
