package sshserve

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/pgtemp"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
)

// countingSource counts reads; each read blocks until release is closed.
type countingSource struct {
	reads   atomic.Int64
	release chan struct{}
	fail    error
}

func (c *countingSource) Snapshot(ctx context.Context) (inspect.Snapshot, error) {
	n := c.reads.Add(1)
	select {
	case <-c.release:
	case <-ctx.Done():
		return inspect.Snapshot{}, ctx.Err()
	}
	return inspect.Snapshot{Schema: "read", Took: inspect.Age(n)}, c.fail
}

func TestSharedSnapshotsReadOncePerInterval(t *testing.T) {
	t.Parallel()
	src := &countingSource{release: make(chan struct{})}
	s := newSharedSnapshots(src, time.Hour)
	// Fifty sessions ask at once: one read, and all of them get it.
	var wg sync.WaitGroup
	got := make([]inspect.Snapshot, 50)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			snap, err := s.Snapshot(context.Background())
			if err != nil {
				t.Error(err)
			}
			got[i] = snap
		}()
	}
	testenv.WaitFor(t, 10*time.Second, "the one read to begin", func() bool { return src.reads.Load() > 0 })
	close(src.release)
	wg.Wait()
	if n := src.reads.Load(); n != 1 {
		t.Fatalf("%d reads for 50 sessions, want 1", n)
	}
	for _, snap := range got {
		if snap.Took != 1 {
			t.Fatalf("a session got read %d, want read 1", snap.Took)
		}
	}
	// Within the interval: the same read.
	if snap, _ := s.Snapshot(context.Background()); snap.Took != 1 || src.reads.Load() != 1 {
		t.Fatalf("within the interval: read %d, %d reads", snap.Took, src.reads.Load())
	}
}

func TestSharedSnapshotsExpireAndDoNotShareACancelledRead(t *testing.T) {
	t.Parallel()
	src := &countingSource{release: make(chan struct{})}
	s := newSharedSnapshots(src, 0) // every ask reads: expiry at its shortest
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Snapshot(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
	close(src.release)
	src.fail = errors.New("database down")
	if _, err := s.Snapshot(context.Background()); err == nil || err.Error() != "database down" {
		t.Fatalf("after a cancelled read the next caller must read anew: %v", err)
	}
	if n := src.reads.Load(); n != 2 {
		t.Fatalf("%d reads, want 2", n)
	}
	if _, err := s.Snapshot(context.Background()); err == nil || src.reads.Load() != 3 {
		t.Fatalf("expired: %v after %d reads, want a third read", err, src.reads.Load())
	}
	// A failed read is shared too: the database is not asked again within the interval.
	s.interval = time.Hour
	if _, err := s.Snapshot(context.Background()); err == nil || src.reads.Load() != 3 {
		t.Fatalf("failure not shared: %v, %d reads", err, src.reads.Load())
	}
}

// statsCluster is a throwaway cluster with pg_stat_statements loaded and one
// migrated database, whose pool it returns: the test counts statements where
// they run, at the database.
func statsCluster(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	c, err := pgtemp.Start(ctx, pgtemp.Options{NoFsync: true,
		Settings: map[string]string{"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "all"}})
	if err != nil {
		t.Fatalf("PostgreSQL with pg_stat_statements (the contrib package): %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := migrations.Apply(ctx, conn, "public", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE EXTENSION pg_stat_statements"); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// snapshotsRun is how many Overview snapshots the database has run: each
// begins its transaction with the planner settings below, and nothing else does.
func snapshotsRun(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
		WHERE query ILIKE '%SET LOCAL enable_seqscan%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Twenty consoles open on one server; the database sees one snapshot per
// refresh interval, not twenty.
func TestTwentySessionsShareOneSnapshotPerRefresh(t *testing.T) {
	t.Parallel()
	pool := statsCluster(t)
	b := setupOn(t, pool, nil)
	for range 20 {
		b.console(b.viewer, 100, 30).waitFor("Overview")
	}
	// Count five snapshots at the database: twenty consoles reading their own
	// would run them within a quarter of a second; shared, they are an interval
	// apart (less the slack of a read's own duration).
	const interval = time.Second // console.Options.Refresh's default
	before := snapshotsRun(t, pool)
	testenv.WaitFor(t, 30*time.Second, "a snapshot", func() bool { return snapshotsRun(t, pool) > before })
	first := time.Now()
	testenv.WaitFor(t, 30*time.Second, "five more snapshots", func() bool { return snapshotsRun(t, pool) >= before+6 })
	took := time.Since(first)
	t.Logf("20 sessions: five snapshots in %v", took.Round(time.Millisecond))
	if took < 4*interval {
		t.Fatalf("20 sessions open: five snapshots in %v, want one per %v", took, interval)
	}
}
