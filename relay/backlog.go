package relay

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outboxtop/outboxtop/internal/pgplan"
	"github.com/outboxtop/outboxtop/internal/sqltemplate"
	"github.com/outboxtop/outboxtop/wire"
)

// BacklogCollector exports the outbox's backlog as Prometheus gauges, read from
// the database at most every 2 seconds however often it is scraped, and less
// often on a table where counting takes long (see throttled). Ages use the
// database's clock.
//
// Counting is exact up to exactMax unpublished rows by the planner's statistics
// (1.35 million took 0.6–1.1 s beside a storm, on the cores the claim needs),
// and while it takes less than exactTimeout. Past either, the counts are the
// planner's estimates, said by outboxtop_backlog_estimated — after a timeout
// for the next backlogEstimateFor — and outboxtop_backlog_up stays 1: a backlog
// too large to count is not a database that does not answer. The lag (oldest
// publishable) is exact either way: it costs a claim's first row.
type BacklogCollector struct {
	pool     *pgxpool.Pool
	query    string
	lagQuery string
	oldest   string
	states   [4]string // the conditions of ready, scheduled, leased, failed

	unpublished  string
	exactMax     int64
	exactTimeout time.Duration

	cache throttled[backlog]
	// estimateUntil: counting exactly timed out; estimate until then. Only the
	// read (under cache's lock) touches it.
	estimateUntil time.Time

	events     *prometheus.Desc
	oldestPend *prometheus.Desc
	oldestRdy  *prometheus.Desc
	up         *prometheus.Desc
	estimated  *prometheus.Desc
}

type backlog struct {
	ready, scheduled, leased, failed int64
	oldestPending, oldestReady       float64
	estimated                        bool
}

// How many unpublished rows are counted exactly, how long an exact count may
// take, and how long the counts are estimated after one did not finish in time.
const (
	backlogExactMax     = 500_000
	backlogExactTimeout = 2500 * time.Millisecond
	backlogEstimateFor  = 10 * time.Minute
)

// NewBacklogCollector returns a collector for schema's outbox_event.
func NewBacklogCollector(pool *pgxpool.Pool, schema string) *BacklogCollector {
	t := sqltemplate.Name(schema, "outbox_event")
	return &BacklogCollector{
		pool:         pool,
		cache:        throttled[backlog]{min: 2 * time.Second, timeout: 5 * time.Second},
		exactTimeout: backlogExactTimeout,
		exactMax:     backlogExactMax,
		unpublished:  `SELECT 1 FROM ` + t + ` WHERE published_at IS NULL`,
		lagQuery:     wire.OldestPublishableSQL(t),
		// The oldest pending event is near the start of the relay's order
		// (outbox_claim_seq_idx): created_at follows seq but for clock skew
		// between writers, so the estimate reads the first 1,000.
		oldest: `SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0) FROM (
			SELECT created_at FROM ` + t + ` WHERE ` + wire.PendingSQL + ` ORDER BY seq LIMIT 1000) o`,
		states: [4]string{
			`SELECT 1 FROM ` + t + ` WHERE ` + wire.ReadySQL,
			`SELECT 1 FROM ` + t + ` WHERE ` + wire.ScheduledSQL,
			`SELECT 1 FROM ` + t + ` WHERE ` + wire.LeasedSQL,
			`SELECT 1 FROM ` + t + ` WHERE ` + wire.FailedSQL,
		},
		// Only unpublished rows: the partial indexes keep this off published history.
		query: `SELECT
			count(*) FILTER (WHERE ` + wire.ReadySQL + `),
			count(*) FILTER (WHERE ` + wire.ScheduledSQL + `),
			count(*) FILTER (WHERE ` + wire.LeasedSQL + `),
			count(*) FILTER (WHERE ` + wire.FailedSQL + `),
			coalesce(extract(epoch FROM now() - min(created_at) FILTER (WHERE ` + wire.PendingSQL + `)), 0),
			-- The lag: the oldest ready event not waiting behind a failed
			-- or scheduled event of its aggregate (a poison event would make that
			-- grow without bound while the relay is healthy).
			(` + wire.OldestPublishableSQL(t) + `)
			FROM ` + t + ` WHERE published_at IS NULL`,
		events:     prometheus.NewDesc("outboxtop_backlog_events", "Unpublished events by state.", []string{"state"}, nil),
		oldestPend: prometheus.NewDesc("outboxtop_oldest_pending_age_seconds", "Age of the oldest pending (ready or scheduled) event, from its created_at.", nil, nil),
		oldestRdy:  prometheus.NewDesc("outboxtop_oldest_ready_age_seconds", "How long the oldest publishable event has been claimable (now - max(created_at, available_at)): the relay's lag. Ready events waiting behind a failed or scheduled head of their aggregate (wire.WaitingSQL) are left out.", nil, nil),
		up:         prometheus.NewDesc("outboxtop_backlog_up", "1 when the last backlog query succeeded.", nil, nil),
		estimated: prometheus.NewDesc("outboxtop_backlog_estimated",
			"1 when outboxtop_backlog_events and the oldest pending age are the planner's estimates: more than 500,000 unpublished rows by its statistics, or counting exactly took longer than 2.5 s (then for 10 minutes).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *BacklogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.events
	ch <- c.oldestPend
	ch <- c.oldestRdy
	ch <- c.up
	ch <- c.estimated
}

// Collect implements prometheus.Collector.
func (c *BacklogCollector) Collect(ch chan<- prometheus.Metric) {
	b, err := c.read()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	estimated := 0.0
	if b.estimated {
		estimated = 1
	}
	ch <- prometheus.MustNewConstMetric(c.estimated, prometheus.GaugeValue, estimated)
	for _, s := range []struct {
		state wire.State
		n     int64
	}{{wire.Ready, b.ready}, {wire.Scheduled, b.scheduled}, {wire.Leased, b.leased}, {wire.Failed, b.failed}} {
		ch <- prometheus.MustNewConstMetric(c.events, prometheus.GaugeValue, float64(s.n), string(s.state))
	}
	ch <- prometheus.MustNewConstMetric(c.oldestPend, prometheus.GaugeValue, b.oldestPending)
	ch <- prometheus.MustNewConstMetric(c.oldestRdy, prometheus.GaugeValue, b.oldestReady)
}

func (c *BacklogCollector) read() (backlog, error) {
	return c.cache.get(func(ctx context.Context) (backlog, error) {
		if time.Now().Before(c.estimateUntil) {
			return c.estimate(ctx)
		}
		if n, err := pgplan.Rows(ctx, c.pool, c.unpublished); err == nil && n > c.exactMax {
			return c.estimate(ctx)
		}
		b, err := c.count(ctx)
		if err == nil || ctx.Err() != nil || !timedOut(err) {
			return b, err
		}
		c.estimateUntil = time.Now().Add(backlogEstimateFor)
		return c.estimate(ctx)
	})
}

// count counts the backlog exactly, within exactTimeout.
func (c *BacklogCollector) count(ctx context.Context) (b backlog, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.exactTimeout)
	defer cancel()
	err = c.pool.QueryRow(ctx, c.query).Scan(&b.ready, &b.scheduled, &b.leased, &b.failed, &b.oldestPending, &b.oldestReady)
	return b, err
}

// estimate reads the counts from the planner's statistics, the oldest pending
// age from the start of the relay's order, and the lag exactly.
func (c *BacklogCollector) estimate(ctx context.Context) (b backlog, err error) {
	b.estimated = true
	for i, n := range []*int64{&b.ready, &b.scheduled, &b.leased, &b.failed} {
		if *n, err = pgplan.Rows(ctx, c.pool, c.states[i]); err != nil {
			return b, err
		}
	}
	if err = c.pool.QueryRow(ctx, c.oldest).Scan(&b.oldestPending); err != nil {
		return b, err
	}
	err = c.pool.QueryRow(ctx, c.lagQuery).Scan(&b.oldestReady)
	return b, err
}

// timedOut: a statement ended by its context's deadline (or the server's
// statement_timeout), not a database that does not answer.
func timedOut(err error) bool {
	var pgErr *pgconn.PgError
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &pgErr) && pgErr.Code == "57014")
}

// throttled caches what a collector read from the database and reads again at
// least min apart, and at least 20 times as long apart as the last read took,
// so that the gauges of a table in an incident (a million failed rows to count)
// cost at most about a twentieth of one database core however often /metrics is
// scraped. The exported values are then older: as old as the interval. A read
// gets timeout.
type throttled[T any] struct {
	min, timeout time.Duration

	mu      sync.Mutex
	readAt  time.Time
	took    time.Duration
	last    T
	lastErr error
}

func (t *throttled[T]) get(read func(context.Context) (T, error)) (T, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if time.Since(t.readAt) < max(t.min, 20*t.took) {
		return t.last, t.lastErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
	defer cancel()
	start := time.Now()
	t.last, t.lastErr = read(ctx)
	t.readAt, t.took = time.Now(), time.Since(start)
	return t.last, t.lastErr
}
