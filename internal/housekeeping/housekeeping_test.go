package housekeeping

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// seed inserts n events published age ago under aggregate prefix.
func seed(t *testing.T, pool *pgxpool.Pool, prefix string, n int, age time.Duration) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `INSERT INTO outbox_event
		(event_id, aggregate_type, aggregate_id, event_type, payload, published_at)
		SELECT gen_random_uuid(), 'order', $1 || g, 'OrderPlaced', '{}', now() - $2::interval
		FROM generate_series(1, $3) g`, prefix, age.String(), n); err != nil {
		t.Fatal(err)
	}
}

func count(t *testing.T, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func newService(t *testing.T, pool *pgxpool.Pool, cfg Config, reg prometheus.Registerer) *Service {
	t.Helper()
	in, err := inspect.New(pool, "public")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(in, cfg, slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRoundArchivesOldAndDeletesExpired(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	ctx := context.Background()
	seed(t, pool, "old-", 30, 2*time.Hour)
	seed(t, pool, "new-", 7, time.Minute)
	// Unpublished rows are never archived, however old.
	if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at)
		VALUES (gen_random_uuid(), 'order', 'pending-1', 'OrderPlaced', '{}', now() - interval '1 day')`); err != nil {
		t.Fatal(err)
	}
	s := newService(t, pool, Config{ArchiveAfter: time.Hour, Retention: 24 * time.Hour, Every: time.Minute, Batch: 8}, nil)
	r, err := s.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Archived != 30 || r.Deleted != 0 {
		t.Fatalf("round: %+v, want 30 archived (in batches of 8), none deleted", r)
	}
	if n := count(t, pool, `SELECT count(*) FROM outbox_event`); n != 8 {
		t.Fatalf("%d rows left in the outbox, want 8 (7 recent, 1 pending)", n)
	}
	// Archived two days ago: past the retention.
	if _, err := pool.Exec(ctx, `UPDATE outbox_event_archive SET archived_at = now() - interval '2 days'
		WHERE aggregate_id IN ('old-1', 'old-2', 'old-3')`); err != nil {
		t.Fatal(err)
	}
	r, err = s.Round(ctx)
	if err != nil || r.Archived != 0 || r.Deleted != 3 {
		t.Fatalf("second round: %+v, %v; want 3 deleted", r, err)
	}
	if n := count(t, pool, `SELECT count(*) FROM outbox_event_archive`); n != 27 {
		t.Fatalf("%d archived left, want 27", n)
	}
}

func TestRunCountsRoundsAndKeepsGoingAfterAnError(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seed(t, pool, "old-", 5, 2*time.Hour)
	reg := prometheus.NewRegistry()
	s := newService(t, pool, Config{ArchiveAfter: time.Hour, Every: time.Second}, reg)
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	ok := s.m.rounds.WithLabelValues("ok")
	failed := s.m.rounds.WithLabelValues("error")
	testenv.WaitFor(t, 30*time.Second, "a successful round", func() bool { return testutil.ToFloat64(ok) >= 1 })
	if got := testutil.ToFloat64(s.m.archived); got != 5 {
		t.Fatalf("archived_total %v, want 5", got)
	}
	if testutil.ToFloat64(s.m.lastSuccess) == 0 {
		t.Fatal("last success not recorded")
	}
	// Take the function away: rounds fail, are counted, and Run goes on.
	if _, err := pool.Exec(context.Background(), `ALTER FUNCTION outboxtop_archive_published(interval, integer) RENAME TO gone`); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "a failed round", func() bool { return testutil.ToFloat64(failed) >= 1 })
	if _, err := pool.Exec(context.Background(), `ALTER FUNCTION gone(interval, integer) RENAME TO outboxtop_archive_published`); err != nil {
		t.Fatal(err)
	}
	seed(t, pool, "later-", 4, 2*time.Hour)
	testenv.WaitFor(t, 30*time.Second, "the later events archived", func() bool { return testutil.ToFloat64(s.m.archived) == 9 })
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func TestOffDoesNothingAndBadPolicyIsRefused(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	seed(t, pool, "old-", 3, 2*time.Hour)
	reg := prometheus.NewRegistry()
	s := newService(t, pool, Config{}, reg)
	s.Run(context.Background()) // returns at once: nothing to do
	if n := count(t, pool, `SELECT count(*) FROM outbox_event`); n != 3 {
		t.Fatalf("off, yet %d of 3 rows left", n)
	}
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Fatalf("off, yet metrics registered: %d families", len(mfs))
	}
	in, _ := inspect.New(pool, "public")
	for _, cfg := range []Config{{ArchiveAfter: -time.Second}, {Retention: time.Hour, Every: time.Millisecond}} {
		if _, err := New(in, cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%+v: %v, want an error naming the flag", cfg, err)
		}
	}
	ro, _ := inspect.New(pool, "public", inspect.ReadOnly())
	if _, err := New(ro, Config{ArchiveAfter: time.Hour, Every: time.Minute}, nil, nil); err == nil {
		t.Error("a read-only inspector was accepted")
	}
}
