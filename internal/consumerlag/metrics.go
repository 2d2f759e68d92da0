package consumerlag

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports a Cache's Report as Prometheus gauges. A scrape never waits
// for the brokers: it exports the last check's values (as old as the cache's
// interval) and starts the next check in the background when one is due. Until
// the first check has ended, it exports nothing.
type Collector struct {
	cache *Cache

	lag, age, groupUp, up *prometheus.Desc
}

// NewCollector returns a collector of cache.
func NewCollector(cache *Cache) *Collector {
	gt := []string{"group", "topic"}
	return &Collector{
		cache:   cache,
		lag:     prometheus.NewDesc("outboxtop_consumer_lag_records", "Records of the outbox's topic not yet consumed by the group (end offset - committed offset, summed over partitions).", gt, nil),
		age:     prometheus.NewDesc("outboxtop_consumer_oldest_unconsumed_age_seconds", "Age of the oldest record of the topic the group has not consumed (its Kafka timestamp); absent when the group is not behind or the record could not be read in time.", gt, nil),
		groupUp: prometheus.NewDesc("outboxtop_consumer_group_up", "1 when the group could be described and its offsets fetched, 0 when a broker refused.", []string{"group"}, nil),
		up:      prometheus.NewDesc("outboxtop_consumer_lag_up", "1 when the last consumer lag check met no error.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	ch <- c.age
	ch <- c.groupUp
	ch <- c.up
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	r, ok := c.cache.Last()
	if !ok {
		return
	}
	up := 1.0
	if len(r.Errors) > 0 {
		up = 0
	}
	for _, g := range r.Groups {
		if g.Error != "" {
			up = 0
			ch <- prometheus.MustNewConstMetric(c.groupUp, prometheus.GaugeValue, 0, g.Name)
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.groupUp, prometheus.GaugeValue, 1, g.Name)
		for _, t := range g.Topics {
			ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(t.Lag), g.Name, t.Topic)
			if t.OldestAge != nil {
				ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, t.OldestAge.Duration().Seconds(), g.Name, t.Topic)
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
}
