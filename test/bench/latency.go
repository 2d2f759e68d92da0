package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/outbox"
)

// latencyRun is commit → Kafka acknowledgement at one offered load.
type latencyRun struct {
	Offered  int     `json:"offered_per_second"`
	Achieved float64 `json:"achieved_per_second"`
	PerTx    int     `json:"events_per_transaction"`
	Events   int     `json:"events_measured"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	P999ms   float64 `json:"p999_ms"`
	Maxms    float64 `json:"max_ms"`
}

// latency offers a steady load to one relay process and measures, per event,
// from the moment the writer's COMMIT returned to published_at, the mark that
// follows Kafka's acknowledgement (so a little more than commit → ack). Both
// clocks are this machine's. Writers commit single events up to 2,000/s and small
// groups above that, as an application at that rate would.
func (e *env) latency(ctx context.Context) error {
	for _, rate := range e.prof.rates {
		r, err := e.latencyAt(ctx, rate, e.prof.latencyFor)
		if err != nil {
			return err
		}
		e.results.Latency = append(e.results.Latency, r)
	}
	return nil
}

func (e *env) latencyAt(ctx context.Context, rate int, d time.Duration) (latencyRun, error) {
	dsn, drop, err := e.clone(ctx, backlog{Events: 0, Payload: 256, Aggregates: 5000})
	if err != nil {
		return latencyRun{}, err
	}
	defer drop()
	k, err := e.newKafka()
	if err != nil {
		return latencyRun{}, err
	}
	defer k.Close()
	relayCmd := exec.Command(e.binary, "--headless", "--dsn", dsn, "--brokers", strings.Join(k.ListenAddrs(), ","), "--log-level", "warn")
	relayCmd.Stderr = os.Stderr
	if err := relayCmd.Start(); err != nil {
		return latencyRun{}, err
	}
	defer func() {
		_ = relayCmd.Process.Signal(syscall.SIGTERM)
		_ = relayCmd.Wait()
	}()
	perTx := max(1, (rate+1999)/2000)
	// Enough writers that commit latency (fsync) does not cap the offered rate.
	writers := min(32, max(4, rate/perTx/100))
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return latencyRun{}, err
	}
	pcfg.MaxConns = int32(writers + 2)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return latencyRun{}, err
	}
	defer pool.Close()
	time.Sleep(time.Second) // the relay connects and LISTENs; nothing to wait on from outside

	txPerWriter := float64(rate) / float64(perTx) / float64(writers)
	interval := time.Duration(float64(time.Second) / txPerWriter)
	warm := time.Now().Add(2 * time.Second)
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var sent int
	var firstErr error
	committed := map[uuid.UUID]time.Time{}
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			next := time.Now()
			n := 0
			for time.Now().Before(deadline) {
				evs := make([]outbox.Event, perTx)
				for i := range evs {
					evs[i] = outbox.Event{AggregateType: "order", AggregateID: fmt.Sprintf("o-%d-%d", w, n%1250),
						EventType: "OrderPlaced", Payload: map[string]any{"n": n, "pad": strings.Repeat("x", 200)}}
					n++
				}
				var ids []uuid.UUID
				tx, err := pool.Begin(ctx)
				if err == nil {
					ids, err = outbox.AddMany(ctx, tx, evs)
					if err == nil {
						err = tx.Commit(ctx)
					} else {
						_ = tx.Rollback(ctx)
					}
				}
				at := time.Now()
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				mu.Lock()
				sent += perTx
				if at.After(warm) {
					for _, id := range ids {
						committed[id] = at
					}
				}
				mu.Unlock()
				next = next.Add(interval)
				if wait := time.Until(next); wait > 0 {
					time.Sleep(wait)
				}
			}
		}(w)
	}
	wg.Wait()
	if firstErr != nil {
		return latencyRun{}, firstErr
	}
	// Let the tail drain, then read the distribution of the steady window.
	for i := 0; i < 300; i++ {
		var left int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM outbox_event WHERE published_at IS NULL").Scan(&left); err != nil {
			return latencyRun{}, err
		}
		if left == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := latencyRun{Offered: rate, PerTx: perTx, Achieved: float64(sent) / d.Seconds()}
	rows, err := pool.Query(ctx, `SELECT event_id, published_at FROM outbox_event WHERE published_at IS NOT NULL`)
	if err != nil {
		return latencyRun{}, err
	}
	var lat []float64
	for rows.Next() {
		var id uuid.UUID
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			return latencyRun{}, err
		}
		if c, ok := committed[id]; ok {
			lat = append(lat, float64(at.Sub(c).Microseconds())/1000)
		}
	}
	if err := rows.Err(); err != nil {
		return latencyRun{}, err
	}
	if len(lat) == 0 {
		return latencyRun{}, fmt.Errorf("no event published at %d/s", rate)
	}
	sort.Float64s(lat)
	q := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	r.Events, r.P50ms, r.P99ms, r.P999ms, r.Maxms = len(lat), q(0.5), q(0.99), q(0.999), lat[len(lat)-1]
	logf("latency at %d/s offered (%.0f/s achieved, %d per tx): p50 %.1f ms, p99 %.1f ms, p999 %.1f ms", rate, r.Achieved, perTx, r.P50ms, r.P99ms, r.P999ms)
	return r, nil
}
