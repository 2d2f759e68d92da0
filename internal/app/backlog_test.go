package app

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/testenv"
	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/wire"
)

// gatherBacklog scrapes c and returns its gauges by name, a label's value in
// braces.
func gatherBacklog(t *testing.T, c *backlogCollector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetValue() + "}"
			}
			got[name] = m.GetGauge().GetValue()
		}
	}
	return got
}

func backlogOn(t *testing.T, pool *pgxpool.Pool) (*backlogCollector, *inspect.Inspector) {
	t.Helper()
	in, err := inspect.New(pool, "public", inspect.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	return newBacklogCollector(in), in
}

// TestBacklogLagLeavesOutWaitingEvents: a poison event an hour old holds back a
// later event of its aggregate; the lag gauge is the age of the oldest event the
// relay could publish (ten seconds), not the hour the waiting one has sat there.
func TestBacklogLagLeavesOutWaitingEvents(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	_, err := pool.Exec(context.Background(), `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at, failed_at, last_error)
		VALUES (gen_random_uuid(), 'order', 'poisoned', 'OrderPlaced', '{}', now() - interval '2 hours', now() - interval '2 hours', now() - interval '1 hour', 'too large');
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		VALUES (gen_random_uuid(), 'order', 'poisoned', 'OrderPaid', '{}', now() - interval '1 hour', now() - interval '1 hour');
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		VALUES (gen_random_uuid(), 'order', 'healthy', 'OrderPlaced', '{}', now() - interval '10 seconds', now() - interval '10 seconds')`)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := backlogOn(t, pool)
	got := gatherBacklog(t, c)
	if lag := got["outboxtop_oldest_ready_age_seconds"]; lag < 10 || lag > 60 {
		t.Errorf("lag %.1f s, want ~10 s (the waiting event is an hour old)", lag)
	}
	if got["outboxtop_backlog_events{ready}"] != 2 || got["outboxtop_backlog_events{failed}"] != 1 ||
		got["outboxtop_backlog_events{waiting}"] != 1 || got["outboxtop_backlog_events{publishable}"] != 1 ||
		got["outboxtop_blocked_aggregates"] != 1 {
		t.Errorf("backlog %v", got)
	}
}

// On a table below the caps every gauge is the count SQL gives, and none is
// marked a bound.
func TestBacklogCountsMatchSQL(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	ctx := context.Background()
	// 30 aggregates headed by a failed event with 2 more failed behind it, 20
	// headed by a scheduled retry with a ready event behind, 10 healthy with a
	// failed event behind a ready one (not blocked: the ready head is
	// publishable), and 5 leased.
	_, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at, last_error)
		SELECT gen_random_uuid(), 'order', 'f-' || (g % 30), 'E', '{}', now(), 'boom' FROM generate_series(0, 89) g ORDER BY g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, available_at, attempts)
		SELECT gen_random_uuid(), 'order', 's-' || g, 'E', '{}', now() + interval '1 hour', 1 FROM generate_series(0, 19) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 's-' || g, 'E', '{}' FROM generate_series(0, 19) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'ok-' || g, 'E', '{}' FROM generate_series(0, 9) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at, last_error)
		SELECT gen_random_uuid(), 'order', 'ok-' || g, 'E', '{}', now(), 'boom' FROM generate_series(0, 9) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, lease_token, lease_until, lease_holder)
		SELECT gen_random_uuid(), 'order', 'l-' || g, 'E', '{}', gen_random_uuid(), now() + interval '1 hour', 'r' FROM generate_series(0, 4) g;
		ANALYZE outbox_event`)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := backlogOn(t, pool)
	got := gatherBacklog(t, c)
	for state, cond := range map[string]string{"ready": wire.ReadySQL, "scheduled": wire.ScheduledSQL,
		"leased": wire.LeasedSQL, "failed": wire.FailedSQL, "waiting": wire.ReadySQL + " AND " + waitsBehindABlocker} {
		var n float64
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_event e WHERE `+cond).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if got["outboxtop_backlog_events{"+state+"}"] != n {
			t.Errorf("%s: gauge %v, SQL %v", state, got["outboxtop_backlog_events{"+state+"}"], n)
		}
		if got["outboxtop_backlog_lower_bound{"+state+"}"] != 0 || got["outboxtop_backlog_upper_bound{"+state+"}"] != 0 {
			t.Errorf("%s marked a bound below the caps: %v", state, got)
		}
	}
	if got["outboxtop_backlog_events{publishable}"] != got["outboxtop_backlog_events{ready}"]-got["outboxtop_backlog_events{waiting}"] {
		t.Errorf("publishable is not ready - waiting: %v", got)
	}
	var blocked float64
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT (aggregate_type, aggregate_id)) FROM outbox_event e WHERE `+blocksItsAggregate).Scan(&blocked); err != nil {
		t.Fatal(err)
	}
	if blocked != 50 || got["outboxtop_blocked_aggregates"] != blocked || got["outboxtop_blocked_aggregates_lower_bound"] != 0 {
		t.Errorf("blocked: gauge %v, SQL %v, want 50 exactly", got["outboxtop_blocked_aggregates"], blocked)
	}
	if got["outboxtop_backlog_up"] != 1 || got["outboxtop_backlog_estimated"] != 0 || got["outboxtop_oldest_pending_age_lower_bound"] != 0 {
		t.Errorf("up %v estimated %v, oldest pending age lower bound %v, want 1, 0 and 0", got["outboxtop_backlog_up"],
			got["outboxtop_backlog_estimated"], got["outboxtop_oldest_pending_age_lower_bound"])
	}
}

// TestBacklogMetricsAgreeWithSnapshot: on a table past the snapshot's default
// caps (more than 5,000 ready rows to scan and count, more than 2,000 failed
// heads to ask), /metrics shows the numbers and the bounds the Overview does.
func TestBacklogMetricsAgreeWithSnapshot(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, failed_at, last_error)
		SELECT gen_random_uuid(), 'order', 'f-' || g, 'E', '{}', now(), 'boom' FROM generate_series(1, 2100) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
		SELECT gen_random_uuid(), 'order', 'f-' || g, 'E', '{}' FROM generate_series(1, 300) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, available_at, attempts)
		SELECT gen_random_uuid(), 'order', 's-' || g, 'E', '{}', now() + interval '1 hour', 1 FROM generate_series(1, 40) g;
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, available_at)
		SELECT gen_random_uuid(), 'order', 'o-' || g, 'E', '{}', now() - interval '1 minute', now() - interval '1 minute'
		FROM generate_series(1, 5200) g;
		ANALYZE outbox_event`)
	if err != nil {
		t.Fatal(err)
	}
	c, in := backlogOn(t, pool)
	got := gatherBacklog(t, c)
	s, err := in.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, b := s.Counts, s.Counts.Bounds
	flag := func(x inspect.Bound, want inspect.Bound) float64 {
		if x == want {
			return 1
		}
		return 0
	}
	for _, w := range []struct {
		state string
		n     int64
		b     inspect.Bound
	}{{"ready", n.Ready, b.Ready}, {"scheduled", n.Scheduled, b.Scheduled}, {"leased", n.Leased, b.Leased},
		{"failed", n.Failed, b.Failed}, {"waiting", n.Waiting, b.Waiting}, {"publishable", n.Publishable, b.Publishable}} {
		if g := got["outboxtop_backlog_events{"+w.state+"}"]; g != float64(w.n) {
			t.Errorf("%s: /metrics %v, snapshot %d", w.state, g, w.n)
		}
		if g := got["outboxtop_backlog_lower_bound{"+w.state+"}"]; g != flag(w.b, inspect.LowerBound) {
			t.Errorf("%s: /metrics lower bound %v, snapshot's bound %q", w.state, g, w.b)
		}
		if g := got["outboxtop_backlog_upper_bound{"+w.state+"}"]; g != flag(w.b, inspect.UpperBound) {
			t.Errorf("%s: /metrics upper bound %v, snapshot's bound %q", w.state, g, w.b)
		}
	}
	if got["outboxtop_blocked_aggregates"] != float64(s.Blocked.Count) ||
		got["outboxtop_blocked_aggregates_lower_bound"] != flag(s.Blocked.Bound, inspect.LowerBound) {
		t.Errorf("blocked: /metrics %v (lower bound %v), snapshot %s", got["outboxtop_blocked_aggregates"],
			got["outboxtop_blocked_aggregates_lower_bound"], s.Blocked.Bound.Format(s.Blocked.Count))
	}
	// The table is past the caps: the agreement is on bounds, not only exact counts.
	if b.Ready != inspect.LowerBound || s.Blocked.Bound != inspect.LowerBound {
		t.Errorf("the table does not pass the caps: bounds %+v, blocked %q", b, s.Blocked.Bound)
	}
	if got["outboxtop_backlog_estimated"] != 1 || got["outboxtop_backlog_up"] != 1 {
		t.Errorf("estimated %v up %v, want 1 and 1", got["outboxtop_backlog_estimated"], got["outboxtop_backlog_up"])
	}
	// Past the caps the oldest pending age is of the rows read: a lower bound,
	// and /metrics says so as the Overview does.
	if s.OldestPendingBound != inspect.LowerBound || got["outboxtop_oldest_pending_age_lower_bound"] != 1 {
		t.Errorf("oldest pending age: snapshot's bound %q, /metrics lower bound %v; want a lower bound, 1",
			s.OldestPendingBound, got["outboxtop_oldest_pending_age_lower_bound"])
	}
	for name, want := range map[string]float64{
		"outboxtop_oldest_ready_age_seconds":   s.OldestPublishableAge.Duration().Seconds(),
		"outboxtop_oldest_pending_age_seconds": s.OldestPendingAge.Duration().Seconds(),
	} {
		if g := got[name]; g < want-30 || g > want+30 || want < 59 {
			t.Errorf("%s: /metrics %v, snapshot %v (about 60 s)", name, g, want)
		}
	}
}

// A database that does not answer is outboxtop_backlog_up 0, and nothing else.
func TestBacklogDownWhenTheDatabaseIsGone(t *testing.T) {
	t.Parallel()
	_, dsn := testenv.Pool(t)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := backlogOn(t, pool)
	pool.Close()
	got := gatherBacklog(t, c)
	if len(got) != 1 || got["outboxtop_backlog_up"] != 0 {
		t.Errorf("gauges %v, want only outboxtop_backlog_up 0", got)
	}
}

// Scrapes within 2 s (and within 20 times the last read's duration) reuse the
// last read: a new row shows only once the interval has passed.
func TestBacklogIsThrottled(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	ctx := context.Background()
	insert := func() {
		if _, err := pool.Exec(ctx, `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload)
			VALUES (gen_random_uuid(), 'order', 'o', 'E', '{}')`); err != nil {
			t.Fatal(err)
		}
	}
	insert()
	c, _ := backlogOn(t, pool)
	if got := gatherBacklog(t, c); got["outboxtop_backlog_events{ready}"] != 1 {
		t.Fatalf("ready %v, want 1", got["outboxtop_backlog_events{ready}"])
	}
	last, _ := c.read()
	if w := c.cache.Wait(); w < backlogEvery || w < 20*last.Took.Duration() {
		t.Errorf("next read after %v, want at least %v and 20 times %v", w, backlogEvery, last.Took)
	}
	insert()
	if got := gatherBacklog(t, c); got["outboxtop_backlog_events{ready}"] != 1 {
		t.Errorf("ready %v within the interval, want the last read's 1", got["outboxtop_backlog_events{ready}"])
	}
	c.cache.Expire()
	if got := gatherBacklog(t, c); got["outboxtop_backlog_events{ready}"] != 2 {
		t.Errorf("ready %v after the interval, want 2", got["outboxtop_backlog_events{ready}"])
	}
}

// The definitions the gauges are checked against, written out: an event
// blocks its aggregate when it is failed or scheduled and no unpublished event
// of the aggregate comes before it; a ready event waits when the first
// unpublished event before it is failed or scheduled.
const (
	blocksItsAggregate = `(failed_at IS NOT NULL OR (lease_until IS NULL OR lease_until <= now()) AND available_at > now())
		AND published_at IS NULL AND NOT EXISTS (SELECT 1 FROM outbox_event p WHERE p.published_at IS NULL
			AND (p.aggregate_type, p.aggregate_id) = (e.aggregate_type, e.aggregate_id) AND p.seq < e.seq)`
	waitsBehindABlocker = `coalesce((SELECT p.failed_at IS NOT NULL OR ((p.lease_until IS NULL OR p.lease_until <= now()) AND p.available_at > now())
		FROM outbox_event p WHERE p.published_at IS NULL
			AND (p.aggregate_type, p.aggregate_id) = (e.aggregate_type, e.aggregate_id) AND p.seq < e.seq
		ORDER BY p.seq LIMIT 1), false)`
)

// The commit-order gauges: the mode, and the aggregates with rows marked
// unserialized, as SQL counts them.
func TestBacklogCountsUnserializedAggregates(t *testing.T) {
	t.Parallel()
	pool, _ := testenv.Pool(t)
	testenv.CommitOrder(t, pool, migrations.OrderEnforce)
	c, _ := backlogOn(t, pool)
	got := gatherBacklog(t, c)
	if got["outboxtop_commit_order{enforce}"] != 1 || got["outboxtop_commit_order{detect}"] != 0 || got["outboxtop_unserialized_aggregates"] != 0 ||
		got["outboxtop_order_lock_waiting_inserts"] != 0 {
		t.Errorf("enforced: %v", got)
	}
	testenv.CommitOrder(t, pool, migrations.OrderDetect)
	// Marks as the relay leaves them when writers overlapped (set by hand:
	// the gauges count what is in the table).
	if _, err := pool.Exec(context.Background(), `
		INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, unserialized)
		SELECT gen_random_uuid(), 'order', 'o-' || (g % 7), 'E', '{}', g % 3 = 0 FROM generate_series(1, 60) g`); err != nil {
		t.Fatal(err)
	}
	var want float64
	if err := pool.QueryRow(context.Background(), `SELECT count(DISTINCT aggregate_id) FROM outbox_event WHERE unserialized`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	c, _ = backlogOn(t, pool)
	got = gatherBacklog(t, c)
	if got["outboxtop_commit_order{detect}"] != 1 || got["outboxtop_commit_order{enforce}"] != 0 ||
		got["outboxtop_unserialized_aggregates"] != want || got["outboxtop_unserialized_aggregates_lower_bound"] != 0 {
		t.Errorf("detecting, %v aggregates marked: %v", want, got)
	}
}
