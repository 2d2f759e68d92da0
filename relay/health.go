package relay

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outboxtop/outboxtop/internal/pgplan"
	"github.com/outboxtop/outboxtop/internal/sqltemplate"
	"github.com/outboxtop/outboxtop/wire"
)

// HealthCollector exports what an alert needs beyond the backlog: blocked
// aggregates and the outbox table's dead tuples (vacuum held back or behind). It
// reads the database at most every 15 seconds however often it is scraped, and
// less often when that read takes long (throttled). The blocked count costs one
// index probe per failed or scheduled event, so it probes at most blockedProbe
// (1,000) of each kind, read along their own indexes. Past that it is the
// planner's estimate of the aggregates with a failed or scheduled event, never
// below the blocked ones found, as the console's: probing a storm of a million
// failed events took seconds, and beyond a few million the read's timeout,
// which left the gauge out exactly in the largest incidents.
type HealthCollector struct {
	pool          *pgxpool.Pool
	blockedQuery  string
	estimateQuery string
	tuplesQuery   string
	schema        string
	blockedProbe  int

	cache throttled[health]

	blocked *prometheus.Desc
	dead    *prometheus.Desc
	live    *prometheus.Desc
}

type health struct {
	blocked, dead, live int64
}

// NewHealthCollector returns a collector for schema's outbox_event.
func NewHealthCollector(pool *pgxpool.Pool, schema string) *HealthCollector {
	t := sqltemplate.Name(schema, "outbox_event")
	return &HealthCollector{
		pool:   pool,
		schema: schema,
		cache:  throttled[health]{min: 15 * time.Second, timeout: 5 * time.Second},
		// A blocked aggregate: its oldest unpublished event is failed or scheduled
		// (wire.BlockerSQL, the condition inspect's Blocked uses too). Each kind
		// is read along its own index, oldest first, at most $1 rows.
		blockedQuery: `WITH f AS MATERIALIZED (
				SELECT h.aggregate_type, h.aggregate_id, h.seq FROM ` + t + ` h
				WHERE ` + wire.FailedSQL + ` ORDER BY h.failed_at, h.seq LIMIT $1
			), s AS MATERIALIZED (
				SELECT h.aggregate_type, h.aggregate_id, h.seq FROM ` + t + ` h
				WHERE ` + wire.ScheduledSQL + ` ORDER BY h.available_at, h.created_at, h.event_id LIMIT $1
			)
			SELECT (SELECT count(*) FROM f), (SELECT count(*) FROM s),
				(SELECT count(*) FROM (SELECT * FROM f UNION ALL SELECT * FROM s) h WHERE ` + wire.HeadSQL(t, "h") + `)`,
		estimateQuery: wire.TroubledAggregatesSQL(t),
		blockedProbe:  1000,
		tuplesQuery: `SELECT coalesce(n_dead_tup, 0), coalesce(n_live_tup, 0) FROM pg_stat_user_tables
			WHERE schemaname = $1 AND relname = 'outbox_event'`,
		blocked: prometheus.NewDesc("outboxtop_blocked_aggregates",
			"Aggregates whose oldest unpublished event is failed or scheduled, so their later events wait. Past 1,000 failed or 1,000 scheduled events, the planner's estimate of the aggregates that have one.", nil, nil),
		dead: prometheus.NewDesc("outboxtop_table_dead_tuples", "Dead tuples in outbox_event (pg_stat_user_tables.n_dead_tup).", nil, nil),
		live: prometheus.NewDesc("outboxtop_table_live_tuples", "Live tuples in outbox_event (pg_stat_user_tables.n_live_tup).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *HealthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.blocked
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
	ch <- prometheus.MustNewConstMetric(c.blocked, prometheus.GaugeValue, float64(h.blocked))
	ch <- prometheus.MustNewConstMetric(c.dead, prometheus.GaugeValue, float64(h.dead))
	ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, float64(h.live))
}

func (c *HealthCollector) read() (health, error) {
	return c.cache.get(func(ctx context.Context) (h health, err error) {
		if h.blocked, err = c.readBlocked(ctx); err != nil {
			return h, err
		}
		err = c.pool.QueryRow(ctx, c.tuplesQuery, c.schema).Scan(&h.dead, &h.live)
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
		return h, err
	})
}

// readBlocked counts the blocked aggregates, or estimates them past
// blockedProbe failed or scheduled events (see HealthCollector).
func (c *HealthCollector) readBlocked(ctx context.Context) (int64, error) {
	var failed, scheduled, blocked int64
	if err := c.pool.QueryRow(ctx, c.blockedQuery, c.blockedProbe+1).Scan(&failed, &scheduled, &blocked); err != nil {
		return 0, err
	}
	if failed <= int64(c.blockedProbe) && scheduled <= int64(c.blockedProbe) {
		return blocked, nil
	}
	est, err := pgplan.Rows(ctx, c.pool, c.estimateQuery)
	return max(est, blocked), err
}
