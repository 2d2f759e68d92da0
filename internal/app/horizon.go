package app

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/throttle"
)

// horizonCollector exports what holds back the database's xmin horizon
// (inspect.Inspector.Horizon), which keeps vacuum from removing dead rows in
// every table, the outbox's among them:
//
//	outboxtop_xmin_horizon_age_seconds   the oldest holder's transaction age
//	                                     (inspect.Horizon.OldestAge; 0: none)
//	outboxtop_xmin_horizon_xid_age       age(xmin) of the oldest xmin held, in
//	                                     transactions (slots and standbys too)
//	outboxtop_xmin_horizon_holders       holders seen (at most inspect.HorizonLimit)
//	outboxtop_xmin_horizon_holder_info   1, for the holder of the oldest xmin
//	                                     only: {kind, pid, application, user}
//
// One info series at most, so the labels' cardinality stays one series per
// relay whatever holds the horizon; its pid and application change with the
// holder. The database's text in the labels is cut to 64 bytes. Horizon reads
// small catalog views (any role may), at most every 15 seconds however often
// /metrics is scraped (throttle.Read).
type horizonCollector struct {
	in    *inspect.Inspector
	cache throttle.Read[inspect.Horizon]

	age, xids, holders, info *prometheus.Desc
}

func newHorizonCollector(in *inspect.Inspector) *horizonCollector {
	return &horizonCollector{
		in:    in,
		cache: throttle.Read[inspect.Horizon]{Min: 15 * time.Second, Timeout: 5 * time.Second, Denied: backlogDenied},
		age: prometheus.NewDesc("outboxtop_xmin_horizon_age_seconds",
			"How long the oldest transaction holding back the database's xmin horizon has been open (0: none): vacuum of every table waits for it.", nil, nil),
		xids: prometheus.NewDesc("outboxtop_xmin_horizon_xid_age",
			"age(xmin) in transactions of the oldest xmin held back (a session, writer, prepared transaction, replication slot or standby feedback; 0: none).", nil, nil),
		holders: prometheus.NewDesc("outboxtop_xmin_horizon_holders", "Holders of the xmin horizon seen (at most 5).", nil, nil),
		info: prometheus.NewDesc("outboxtop_xmin_horizon_holder_info",
			"1 for the holder of the oldest xmin: its kind, pid (0 for slots and prepared transactions), application (a slot's or prepared transaction's name) and user.",
			[]string{"kind", "pid", "application", "user"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *horizonCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.age, c.xids, c.holders, c.info} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A failed read exports nothing:
// outboxtop_backlog_up already says when the database does not answer.
func (c *horizonCollector) Collect(ch chan<- prometheus.Metric) {
	h, err := c.cache.Get(c.in.Horizon)
	if err != nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.age, h.OldestAge().Duration().Seconds())
	gauge(c.holders, float64(len(h.Holders)))
	x := h.Oldest()
	if x == nil {
		gauge(c.xids, 0)
		return
	}
	gauge(c.xids, float64(x.XminAge))
	app := x.Application
	if x.Kind == inspect.HolderSlot || x.Kind == inspect.HolderPrepared {
		app = x.Name
	}
	gauge(c.info, 1, x.Kind, strconv.Itoa(int(x.PID)), label(app), label(x.User))
}

// label keeps a label value short and valid UTF-8 (the client library refuses
// invalid UTF-8, and an application_name is whatever a client sent).
func label(s string) string {
	b := []rune{}
	for _, r := range s {
		if r == '\uFFFD' {
			continue
		}
		if len(string(b))+len(string(r)) > 64 {
			break
		}
		b = append(b, r)
	}
	return string(b)
}
