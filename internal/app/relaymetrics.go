package app

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/throttle"
)

// relaysCollector exports the relays the outbox knows of, as the console's
// Overview and `outboxtop status` see them (inspect.Snapshot.Relays: heartbeats
// in outbox_relay, and the holders of live leases), so that an alert can tell
// "no relay is live" from the database's side, whichever process Prometheus
// scrapes and whether or not it scrapes the relays themselves:
//
//	outboxtop_relays_live       relays live (inspect.Snapshot.RelaysLive: beat
//	                            within 3 intervals and not stopped, or holding a
//	                            live lease)
//	outboxtop_relays_gone       heartbeat rows gone (not stopped, not written for
//	                            3 intervals: died, froze or lost the database),
//	                            as the console counts them
//	outboxtop_relays_seen       relays seen at all (heartbeat rows, at most
//	                            inspect.RelaysLimit, and lease holders); 0: none
//	                            ever, or their rows were cleaned up
//	outboxtop_no_relay_seconds  how long no relay has been live
//	                            (inspect.Snapshot.NoRelayFor): 0 while one is,
//	                            else the age of the freshest heartbeat; NaN when
//	                            no relay was ever seen (outboxtop_relays_seen 0)
//
// It takes a read-only Snapshot at most every 15 seconds however often it is
// scraped, and at least 20 times as long apart as the last one took. Nothing
// is exported when the snapshot fails (outboxtop_backlog_up says whether the
// database answers) or when the heartbeats cannot be read (a role without
// SELECT on outbox_relay, such as `outboxtop grants --role relay`'s): relays
// seen only by their leases are too little to say none is live. A role that
// may not take a snapshot or read the heartbeats is asked again only every 10
// minutes, so the server's log does not fill with its permission errors.
type relaysCollector struct {
	in *inspect.Inspector

	cache throttle.Read[relaysSeen]

	live, gone, seen, noRelay *prometheus.Desc
}

type relaysSeen struct {
	live, gone, seen int
	noRelay          float64
}

const (
	relaysEvery  = 15 * time.Second
	relaysDenied = 10 * time.Minute
	relaysTake   = 5 * time.Second
)

func newRelaysCollector(in *inspect.Inspector) *relaysCollector {
	return &relaysCollector{
		in:    in,
		cache: throttle.Read[relaysSeen]{Min: relaysEvery, Timeout: relaysTake, Denied: relaysDenied},
		live: prometheus.NewDesc("outboxtop_relays_live",
			"Relays live as the outbox sees them: a heartbeat within 3 intervals and not stopped, or a live lease.", nil, nil),
		gone: prometheus.NewDesc("outboxtop_relays_gone",
			"Relay heartbeats not stopped and not written for 3 intervals: the relay died, froze or lost the database.", nil, nil),
		seen: prometheus.NewDesc("outboxtop_relays_seen",
			"Relays seen at all: heartbeat rows (live, gone or stopped) and holders of live leases.", nil, nil),
		noRelay: prometheus.NewDesc("outboxtop_no_relay_seconds",
			"Seconds since a relay was last live: 0 while one is, else the age of the freshest heartbeat; NaN when none was ever seen.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *relaysCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.live
	ch <- c.gone
	ch <- c.seen
	ch <- c.noRelay
}

// Collect implements prometheus.Collector.
func (c *relaysCollector) Collect(ch chan<- prometheus.Metric) {
	r, ok := c.read()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, float64(r.live))
	ch <- prometheus.MustNewConstMetric(c.gone, prometheus.GaugeValue, float64(r.gone))
	ch <- prometheus.MustNewConstMetric(c.seen, prometheus.GaugeValue, float64(r.seen))
	ch <- prometheus.MustNewConstMetric(c.noRelay, prometheus.GaugeValue, r.noRelay)
}

func (c *relaysCollector) read() (relaysSeen, bool) {
	r, err := c.cache.Get(func(ctx context.Context) (relaysSeen, error) {
		s, err := c.in.Snapshot(ctx)
		switch {
		case err != nil:
			return relaysSeen{}, err
		case s.RelaysError != "":
			return relaysSeen{}, fmt.Errorf("%w: %s", throttle.ErrDenied, s.RelaysError)
		}
		return relaysOf(s), nil
	})
	return r, err == nil
}

// relaysOf is what the gauges say of s.
func relaysOf(s inspect.Snapshot) relaysSeen {
	r := relaysSeen{live: s.RelaysLive(), seen: len(s.Relays), noRelay: math.NaN()}
	for _, x := range s.Relays {
		if x.State == inspect.RelayGone {
			r.gone++
		}
	}
	if age, seen := s.NoRelayFor(); seen {
		r.noRelay = age.Duration().Seconds()
	}
	return r
}
