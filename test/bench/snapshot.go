package main

import (
	"context"
	"sort"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/inspect"
)

// snapshotRun is the console's refresh cost on a big table.
type snapshotRun struct {
	Published int     `json:"published_rows"`
	Pending   int     `json:"pending_rows"`
	Runs      int     `json:"runs"`
	MedianMs  float64 `json:"median_ms"`
	P90Ms     float64 `json:"p90_ms"`
}

func (e *env) snapshot(ctx context.Context) error {
	for _, published := range e.prof.snapshot {
		r, err := e.snapshotAt(ctx, published, 100_000)
		if err != nil {
			return err
		}
		e.results.Snapshot = append(e.results.Snapshot, r)
	}
	return nil
}

func (e *env) snapshotAt(ctx context.Context, published, pending int) (snapshotRun, error) {
	b := backlog{Events: published + pending, Payload: 256, Aggregates: 5000}
	dsn, drop, err := e.clone(ctx, b)
	if err != nil {
		return snapshotRun{}, err
	}
	defer drop()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return snapshotRun{}, err
	}
	defer pool.Close()
	// Publish all but the last `pending` events, spread over the last week, as a
	// relay would have; then let autovacuum's work be done.
	if _, err := pool.Exec(ctx, `UPDATE outbox_event SET published_at = now() - (seq % 604800) * interval '1 second',
		attempts = 1, kafka_topic = 'outbox.order', kafka_partition = 0, kafka_offset = seq
		WHERE seq <= $1`, published); err != nil {
		return snapshotRun{}, err
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE outbox_event"); err != nil {
		return snapshotRun{}, err
	}
	in, err := inspect.New(pool, "public")
	if err != nil {
		return snapshotRun{}, err
	}
	if _, err := in.Snapshot(ctx); err != nil { // warm the cache, as a console does after its first refresh
		return snapshotRun{}, err
	}
	const runs = 15
	took := make([]float64, runs)
	for i := range took {
		start := time.Now()
		if _, err := in.Snapshot(ctx); err != nil {
			return snapshotRun{}, err
		}
		took[i] = float64(time.Since(start).Microseconds()) / 1000
	}
	sort.Float64s(took)
	r := snapshotRun{Published: published, Pending: pending, Runs: runs, MedianMs: took[runs/2], P90Ms: took[runs*9/10]}
	logf("snapshot with %s published + %s pending: median %.1f ms, p90 %.1f ms", human(published), human(pending), r.MedianMs, r.P90Ms)
	return r, nil
}
