package relay

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outboxtop/outboxtop/internal/eventstate"
)

// BacklogCollector exports the outbox's backlog as Prometheus gauges, read from
// the database at most every few seconds however often it is scraped. Ages use
// the database's clock.
type BacklogCollector struct {
	pool  *pgxpool.Pool
	query string

	mu      sync.Mutex
	readAt  time.Time
	last    backlog
	lastErr error

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
	t := pgx.Identifier{schema, "outbox_event"}.Sanitize()
	return &BacklogCollector{
		pool: pool,
		// Only unpublished rows: the partial indexes keep this off published history.
		query: `SELECT
			count(*) FILTER (WHERE ` + eventstate.ReadySQL + `),
			count(*) FILTER (WHERE ` + eventstate.ScheduledSQL + `),
			count(*) FILTER (WHERE ` + eventstate.LeasedSQL + `),
			count(*) FILTER (WHERE ` + eventstate.FailedSQL + `),
			coalesce(extract(epoch FROM now() - min(created_at) FILTER (WHERE ` + eventstate.PendingSQL + `)), 0),
			coalesce(extract(epoch FROM now() - min(available_at) FILTER (WHERE ` + eventstate.ReadySQL + `)), 0)
			FROM ` + t + ` WHERE published_at IS NULL`,
		events:     prometheus.NewDesc("outboxtop_backlog_events", "Unpublished events by state.", []string{"state"}, nil),
		oldestPend: prometheus.NewDesc("outboxtop_oldest_pending_age_seconds", "Age of the oldest pending (ready or scheduled) event, from its created_at.", nil, nil),
		oldestRdy:  prometheus.NewDesc("outboxtop_oldest_ready_age_seconds", "How long the oldest ready event has been publishable (now - available_at): the relay's lag.", nil, nil),
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
		state eventstate.State
		n     int64
	}{{eventstate.Ready, b.ready}, {eventstate.Scheduled, b.scheduled}, {eventstate.Leased, b.leased}, {eventstate.Failed, b.failed}} {
		ch <- prometheus.MustNewConstMetric(c.events, prometheus.GaugeValue, float64(s.n), string(s.state))
	}
	ch <- prometheus.MustNewConstMetric(c.oldestPend, prometheus.GaugeValue, b.oldestPending)
	ch <- prometheus.MustNewConstMetric(c.oldestRdy, prometheus.GaugeValue, b.oldestReady)
}

func (c *BacklogCollector) read() (backlog, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.readAt) < 2*time.Second {
		return c.last, c.lastErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var b backlog
	err := c.pool.QueryRow(ctx, c.query).Scan(&b.ready, &b.scheduled, &b.leased, &b.failed, &b.oldestPending, &b.oldestReady)
	c.readAt, c.last, c.lastErr = time.Now(), b, err
	return b, err
}
