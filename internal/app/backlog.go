package app

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/throttle"
	"github.com/outboxtop/outboxtop/wire"
)

// backlogCollector exports the outbox's backlog as the console's Overview,
// `outboxtop status` and the fleet rows count it: inspect.Inspector.Backlog,
// the Snapshot's own counting steps, so the four agree on one table. Every
// count is exact or a bound that holds (inspect.Bound), never the planner's
// statistics:
//
//	outboxtop_backlog_events{state}       ready, scheduled, leased, failed,
//	                                      waiting, publishable
//	outboxtop_backlog_lower_bound{state}  1 where that count is a lower bound
//	outboxtop_backlog_upper_bound{state}  1 where it is an upper bound
//	                                      (publishable beside an exact ready)
//	outboxtop_blocked_aggregates          as the Overview's blocked count
//	outboxtop_blocked_aggregates_lower_bound
//	outboxtop_commit_order{mode}          1 for the table's mode (enforce,
//	                                      detect, off), 0 for the others
//	outboxtop_unserialized_aggregates     aggregates whose seq order may not
//	                                      be their commit order (an estimate,
//	                                      an upper bound: inspect.Order)
//	outboxtop_unserialized_aggregates_lower_bound
//	outboxtop_order_lock_waiting_inserts  inserts waiting now for an order
//	                                      lock (a writer of their aggregate,
//	                                      or any session, holds it open)
//	outboxtop_oldest_pending_age_seconds  inspect.Snapshot.OldestPendingAge
//	outboxtop_oldest_pending_age_lower_bound
//	                                      1 when that age is a lower bound
//	                                      (not every pending row was read)
//	outboxtop_oldest_ready_age_seconds    the lag: OldestPublishableAge
//	outboxtop_oldest_publishable_age_seconds  the same lag under the name the
//	                                      alert rules and the dashboard read
//	outboxtop_backlog_up                  1 when the last read succeeded
//	outboxtop_backlog_estimated           1 when any count is not exact
//
// Backlog reads only outbox_event, so it works under `outboxtop grants --role
// relay`. It is read at most every 2 seconds however often /metrics is
// scraped, and at least 20 times as long apart as the last read took, so a
// slow table costs at most about a twentieth of a database backend. A role
// denied the read (42501) is asked again only every 10 minutes, so the
// server's log does not fill with its permission errors.
type backlogCollector struct {
	in *inspect.Inspector

	cache throttle.Read[inspect.Backlog]

	events, lower, upper, blocked, blockedLower     *prometheus.Desc
	order, unserialized, unserializedLower, waiting *prometheus.Desc
	oldestPend, oldestRdy, oldestPub, up, estimated *prometheus.Desc
	oldestPendLower                                 *prometheus.Desc
}

const (
	backlogEvery  = 2 * time.Second
	backlogDenied = 10 * time.Minute
	backlogTake   = 5 * time.Second
)

func newBacklogCollector(in *inspect.Inspector) *backlogCollector {
	return &backlogCollector{
		in:     in,
		cache:  throttle.Read[inspect.Backlog]{Min: backlogEvery, Timeout: backlogTake, Denied: backlogDenied},
		events: prometheus.NewDesc("outboxtop_backlog_events", "Unpublished events by state (ready, scheduled, leased, failed; waiting and publishable split ready), as the console counts them: exact, or a bound (outboxtop_backlog_lower_bound, outboxtop_backlog_upper_bound).", []string{"state"}, nil),
		lower:  prometheus.NewDesc("outboxtop_backlog_lower_bound", "1 when outboxtop_backlog_events of the state is a lower bound (counting stopped at a cap): the true count is at least the value.", []string{"state"}, nil),
		upper:  prometheus.NewDesc("outboxtop_backlog_upper_bound", "1 when outboxtop_backlog_events of the state is an upper bound: the true count is at most the value.", []string{"state"}, nil),
		blocked: prometheus.NewDesc("outboxtop_blocked_aggregates",
			"Aggregates whose oldest unpublished event is failed or scheduled, so their later events wait: exact, or the blocked aggregates found (outboxtop_blocked_aggregates_lower_bound).", nil, nil),
		blockedLower: prometheus.NewDesc("outboxtop_blocked_aggregates_lower_bound", "1 when outboxtop_blocked_aggregates is a lower bound: the blocked aggregates found.", nil, nil),
		order: prometheus.NewDesc("outboxtop_commit_order",
			"1 for the commit-order mode of outbox_event (enforce: seq order is commit order per aggregate; detect: unserialized writers are counted; off), 0 for the others.", []string{"mode"}, nil),
		unserialized: prometheus.NewDesc("outboxtop_unserialized_aggregates",
			"Aggregates of unknown order still in outbox_event: events from transactions that overlapped, or present when the table was adopted; their seq order (the published order) may not be their commit order. An estimate: every aggregate published out of commit order is counted, and some counted may be in order.", nil, nil),
		unserializedLower: prometheus.NewDesc("outboxtop_unserialized_aggregates_lower_bound", "1 when outboxtop_unserialized_aggregates is a lower bound: the aggregates found among the first marked rows read.", nil, nil),
		waiting: prometheus.NewDesc("outboxtop_order_lock_waiting_inserts",
			"Inserts waiting now for an order lock of the outbox: with the order enforced, a transaction that wrote the same aggregate (or any session holding the lock) is still open.", nil, nil),
		oldestPend: prometheus.NewDesc("outboxtop_oldest_pending_age_seconds", "Age of the oldest pending (ready or scheduled) event, from its created_at.", nil, nil),
		oldestPendLower: prometheus.NewDesc("outboxtop_oldest_pending_age_lower_bound",
			"1 when outboxtop_oldest_pending_age_seconds is a lower bound: not every pending row was read (the backlog is past what a read counts one by one), and the oldest may be older.", nil, nil),
		oldestRdy: prometheus.NewDesc("outboxtop_oldest_ready_age_seconds", "How long the oldest publishable event has been claimable (now - max(created_at, available_at)): the relay's lag. Ready events waiting behind a failed or scheduled head of their aggregate are left out.", nil, nil),
		oldestPub: prometheus.NewDesc("outboxtop_oldest_publishable_age_seconds", "The relay's lag, as outboxtop_oldest_ready_age_seconds: how long the oldest publishable event (not waiting behind a failed or scheduled head of its aggregate) has been claimable.", nil, nil),
		up:        prometheus.NewDesc("outboxtop_backlog_up", "1 when the last backlog read succeeded.", nil, nil),
		estimated: prometheus.NewDesc("outboxtop_backlog_estimated",
			"1 when any of outboxtop_backlog_events or outboxtop_blocked_aggregates is not exact but a bound (see outboxtop_backlog_lower_bound).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.events, c.lower, c.upper, c.blocked, c.blockedLower, c.order, c.unserialized, c.unserializedLower, c.waiting, c.oldestPend, c.oldestPendLower, c.oldestRdy, c.oldestPub, c.up, c.estimated} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	b, err := c.read()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	flag := func(ok bool) float64 {
		if ok {
			return 1
		}
		return 0
	}
	gauge(c.up, 1)
	gauge(c.estimated, flag(!b.Exact()))
	n, bd := b.Counts, b.Counts.Bounds
	for _, s := range []struct {
		state string
		n     int64
		b     inspect.Bound
	}{
		{string(wire.Ready), n.Ready, bd.Ready}, {string(wire.Scheduled), n.Scheduled, bd.Scheduled},
		{string(wire.Leased), n.Leased, bd.Leased}, {string(wire.Failed), n.Failed, bd.Failed},
		{"waiting", n.Waiting, bd.Waiting}, {"publishable", n.Publishable, bd.Publishable},
	} {
		gauge(c.events, float64(s.n), s.state)
		gauge(c.lower, flag(s.b == inspect.LowerBound), s.state)
		gauge(c.upper, flag(s.b == inspect.UpperBound), s.state)
	}
	gauge(c.blocked, float64(b.Blocked.Count))
	gauge(c.blockedLower, flag(b.Blocked.Bound == inspect.LowerBound))
	for _, m := range []string{"enforce", "detect", "off"} {
		gauge(c.order, flag(b.Order.Mode == m), m)
	}
	gauge(c.unserialized, float64(b.Order.Unserialized))
	gauge(c.unserializedLower, flag(b.Order.Bound == inspect.LowerBound))
	gauge(c.waiting, float64(b.Order.Waiting))
	gauge(c.oldestPend, b.OldestPendingAge.Duration().Seconds())
	gauge(c.oldestPendLower, flag(b.OldestPendingBound == inspect.LowerBound))
	gauge(c.oldestRdy, b.OldestPublishableAge.Duration().Seconds())
	gauge(c.oldestPub, b.OldestPublishableAge.Duration().Seconds())
}

// read returns the last Backlog read, reading again when it is old enough.
func (c *backlogCollector) read() (inspect.Backlog, error) { return c.cache.Get(c.in.Backlog) }
