package relay

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outboxtop/outboxtop/internal/sqltemplate"
	"github.com/outboxtop/outboxtop/wire"
)

// BacklogCollector exports the outbox's backlog as Prometheus gauges, read from
// the database at most every 2 seconds however often it is scraped, and less
// often on a table where counting takes long (see throttled). Ages use the
// database's clock.
type BacklogCollector struct {
	pool  *pgxpool.Pool
	query string

	cache throttled[backlog]

	events     *prometheus.Desc
	oldestPend *prometheus.Desc
	oldestRdy  *prometheus.Desc
	up         *prometheus.Desc
}

type backlog struct {
	ready, scheduled, leased, failed int64
	oldestPending, oldestReady       float64
}

// NewBacklogCollector returns a collector for schema's outbox_event.
func NewBacklogCollector(pool *pgxpool.Pool, schema string) *BacklogCollector {
	t := sqltemplate.Name(schema, "outbox_event")
	return &BacklogCollector{
		pool:  pool,
		cache: throttled[backlog]{min: 2 * time.Second, timeout: 3 * time.Second},
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
	}
}

// Describe implements prometheus.Collector.
func (c *BacklogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.events
	ch <- c.oldestPend
	ch <- c.oldestRdy
	ch <- c.up
}

// Collect implements prometheus.Collector.
func (c *BacklogCollector) Collect(ch chan<- prometheus.Metric) {
	b, err := c.read()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
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
	return c.cache.get(func(ctx context.Context) (b backlog, err error) {
		err = c.pool.QueryRow(ctx, c.query).Scan(&b.ready, &b.scheduled, &b.leased, &b.failed, &b.oldestPending, &b.oldestReady)
		return b, err
	})
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
