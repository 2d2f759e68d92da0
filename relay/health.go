package relay

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outboxtop/outboxtop/internal/pgsql"
	"github.com/outboxtop/outboxtop/internal/throttle"
)

// HealthCollector exports what an alert needs beyond the backlog (whose gauges,
// and the blocked aggregates', the app exports from inspect's counts): the
// outbox table's dead and live tuples (vacuum held back or behind). It reads
// the database at most every 15 seconds however often it is scraped, and less
// often when that read takes long (throttle.Read).
type HealthCollector struct {
	pool        *pgxpool.Pool
	tuplesQuery string
	schema      string

	cache throttle.Read[health]

	dead *prometheus.Desc
	live *prometheus.Desc
}

type health struct {
	dead, live int64
}

// NewHealthCollector returns a collector for schema's outbox_event.
func NewHealthCollector(pool *pgxpool.Pool, schema string) *HealthCollector {
	return &HealthCollector{
		pool:        pool,
		schema:      schema,
		cache:       throttle.Read[health]{Min: 15 * time.Second, Timeout: 5 * time.Second},
		tuplesQuery: relaySQL.For(schema).SQL("table_tuples"),
		dead:        prometheus.NewDesc("outboxtop_table_dead_tuples", "Dead tuples in outbox_event (pg_stat_user_tables.n_dead_tup).", nil, nil),
		live:        prometheus.NewDesc("outboxtop_table_live_tuples", "Live tuples in outbox_event (pg_stat_user_tables.n_live_tup).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *HealthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.dead
	ch <- c.live
}

// Collect implements prometheus.Collector. A failed read exports nothing:
// outboxtop_backlog_up already says the database does not answer.
func (c *HealthCollector) Collect(ch chan<- prometheus.Metric) {
	h, err := c.read()
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.dead, prometheus.GaugeValue, float64(h.dead))
	ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, float64(h.live))
}

func (c *HealthCollector) read() (health, error) {
	return c.cache.Get(func(ctx context.Context) (h health, err error) {
		err = c.pool.QueryRow(ctx, c.tuplesQuery, pgsql.Name(c.schema, "outbox_event")).Scan(&h.dead, &h.live)
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
		return h, err
	})
}
