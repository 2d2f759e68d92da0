package main

import (
	"context"
	"sort"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/inspect"
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
	// An empty migrated database, filled in place: at 10M rows a template copy
	// would cost more than the load.
	dsn, drop, err := e.clone(ctx, backlog{Events: 0, Payload: 256, Aggregates: 5000})
	if err != nil {
		return snapshotRun{}, err
	}
	defer drop()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return snapshotRun{}, err
	}
	defer pool.Close()
	start := time.Now()
	// Published history spread over the last week, as a relay would have left it,
	// then the pending backlog on top.
	for _, q := range []struct {
		sql  string
		rows int
	}{
		{`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at,
			attempts, published_at, kafka_topic, kafka_partition, kafka_offset)
		SELECT gen_random_uuid(), 'order', 'o-' || (g % 5000), 'OrderPlaced', jsonb_build_object('n', g, 'pad', repeat('x', 216)),
			now() - (g % 604800) * interval '1 second' - interval '5 ms', now() - (g % 604800) * interval '1 second' - interval '5 ms',
			1, now() - (g % 604800) * interval '1 second', 'outbox.order', g % 6, g
		FROM generate_series(1, $1) g`, published},
		{`INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'o-' || (g % 5000), 'OrderPlaced', jsonb_build_object('n', g, 'pad', repeat('x', 216))
		FROM generate_series(1, $1) g`, pending},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.rows); err != nil {
			return snapshotRun{}, err
		}
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE outbox_event"); err != nil {
		return snapshotRun{}, err
	}
	logf("loaded %s published + %s pending in %v", human(published), human(pending), time.Since(start).Round(time.Second))
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
