package relay

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// CeilingResult is what MeasureCeiling measured.
type CeilingResult struct {
	// Events is how many events were marked published.
	Events int
	// Elapsed is how long that took, from the first claim to the last mark.
	Elapsed time.Duration
	// Claims holds the duration of every claim that returned events.
	Claims []time.Duration
}

// MeasureCeiling is a benchmark lever: what the database allows the relay.
// In loops goroutines it runs the relay's own claim and mark statements
// (cfg's ordering and batch size) with no broker in between, until nothing is
// claimable. It marks events published with made-up Kafka coordinates: run it
// only on a throwaway copy of an outbox, never on one whose events matter. The
// outboxtop binary never calls it (its linker leaves it out).
//
// Each loop is a Relay of its own, as each relay process is: loops sharing one
// would share its held heads, so one loop's claim holding the hot aggregate's
// head for milliseconds would make every loop pass that aggregate over
// (heads.go) and stop early.
func MeasureCeiling(ctx context.Context, pool *pgxpool.Pool, cfg Config, loops int) (CeilingResult, error) {
	relays := make([]*Relay, loops)
	for i := range relays {
		r, err := New(pool, nil, cfg)
		if err != nil {
			return CeilingResult{}, err
		}
		relays[i] = r
	}
	var mu sync.Mutex
	var claims []time.Duration
	var total atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	start := time.Now()
	for _, r := range relays {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// In ordered mode another loop's batch may be all that blocks this one:
			// give up only after a few empty claims in a row, and not while this
			// loop passes over an aggregate whose head another loop's claim held
			// (the relay claims it again after heldSkip).
			for empty := 0; empty < 3 && ctx.Err() == nil; {
				token := uuid.New()
				began := time.Now()
				events, again, err := r.claimAgain(ctx, token, r.cfg.BatchSize)
				took := time.Since(began)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				if len(events) == 0 {
					if types, _ := r.heads.skipped(time.Now()); again || len(types) > 0 {
						sleep(ctx, 10*time.Millisecond)
						continue
					}
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
	return CeilingResult{Events: int(total.Load()), Elapsed: time.Since(start), Claims: claims}, firstErr
}
