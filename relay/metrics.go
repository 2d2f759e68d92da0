package relay

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the relay's Prometheus metrics. Labels are bounded: none carries an
// event id, aggregate or topic.
type Metrics struct {
	Published       prometheus.Counter
	Failed          prometheus.Counter
	Retried         prometheus.Counter
	Released        prometheus.Counter
	LostFences      prometheus.Counter
	LeaseRenewals   prometheus.Counter
	CommitToAck     prometheus.Histogram
	ClaimSeconds    prometheus.Histogram
	MarkSeconds     prometheus.Histogram
	BatchSize       prometheus.Histogram
	BrokerReachable prometheus.Gauge
	Paused          prometheus.Gauge
	Blocked         prometheus.Counter
	Unblocked       prometheus.Counter
	OrderUnknown    prometheus.Counter
	HeadsLocked     prometheus.Gauge
	HeadsSkipped    prometheus.Counter
	// HeartbeatFailures counts heartbeats not written (outbox_relay, migration
	// 010); HeartbeatSeconds is the time of the last one written.
	HeartbeatFailures prometheus.Counter
	HeartbeatSeconds  prometheus.Gauge
	// MissingTopics counts the Kafka topics that do not exist while events wait
	// for them; MissingTopicEvents the events waiting (Status().MissingTopics
	// names the topics: a label would be unbounded).
	MissingTopics      prometheus.Gauge
	MissingTopicEvents prometheus.Gauge
}

// NewMetrics creates the relay's metrics and registers them with reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	ns := "outboxtop_relay"
	m := &Metrics{
		Published:     prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "published_total", Help: "Events acknowledged by Kafka and marked published."}),
		Failed:        prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "failed_total", Help: "Events failed (dead): out of attempts or an error that cannot succeed."}),
		Retried:       prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "retried_total", Help: "Events scheduled again after a failed attempt."}),
		Released:      prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "released_total", Help: "Events released without an attempt (broker outage, a topic that does not exist, queued behind a failed event of their aggregate, shutdown)."}),
		LostFences:    prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "lost_fences_total", Help: "Events whose lease was lost before the mark (published again by another relay)."}),
		LeaseRenewals: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "lease_renewals_total", Help: "Lease renewals of slow batches."}),
		CommitToAck: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "commit_to_ack_seconds",
			Help: "From the event's created_at (its transaction's start) to Kafka's acknowledgement.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 18)}),
		ClaimSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "claim_seconds", Help: "Duration of a claim transaction.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		MarkSeconds:  prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "mark_seconds", Help: "Duration of a batch's mark statement.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		BatchSize:    prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "batch_size", Help: "Events per claimed batch.", Buckets: prometheus.ExponentialBuckets(1, 2, 15)}),
		BrokerReachable: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "broker_reachable",
			Help: "1 while Kafka answers, 0 during an outage."}),
		Paused: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "paused", Help: "1 while the relay is paused by an operator."}),
		Blocked: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "blocked_total",
			Help: "Events the ordered claim found waiting behind a failed, scheduled or leased event of their aggregate and took out of its window."}),
		OrderUnknown: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "order_unknown_total",
			Help: "Events the relay marked unserialized: inserted by a transaction that overlapped the one of the event before them in their aggregate, so which committed first is unknown."}),
		Unblocked: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "unblocked_total",
			Help: "Waiting events brought back to the claim window (after their blocker was published, or by the sweep)."}),
		HeadsSkipped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "claim_heads_skipped_total",
			Help: "Ready aggregate heads a claim found locked (by a concurrent claim, or another session) and skipped: the ordered claim's contention."}),
		HeadsLocked: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "heads_locked",
			Help: "Aggregates whose head event another session has held locked for longer than the lock timeout; they wait."}),
		HeartbeatFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "heartbeat_failures_total",
			Help: "Heartbeats not written to outbox_relay (database unreachable, no grant, holder name taken by another role); relaying goes on."}),
		HeartbeatSeconds: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "heartbeat_timestamp_seconds",
			Help: "Unix time of the last heartbeat written to outbox_relay."}),
		MissingTopics: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "missing_topics",
			Help: "Kafka topics that do not exist while events wait for them (found in the last 2 minutes; the relay's log and status name them)."}),
		MissingTopicEvents: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "missing_topic_events",
			Help: "Events that found their Kafka topic missing in the last 2 minutes: they wait for it, their attempts not counted."}),
	}
	m.BrokerReachable.Set(1)
	if reg != nil {
		reg.MustRegister(m.Published, m.Failed, m.Retried, m.Released, m.LostFences, m.LeaseRenewals,
			m.CommitToAck, m.ClaimSeconds, m.MarkSeconds, m.BatchSize, m.BrokerReachable, m.Paused,
			m.Blocked, m.Unblocked, m.OrderUnknown, m.HeadsLocked, m.HeadsSkipped, m.HeartbeatFailures, m.HeartbeatSeconds,
			m.MissingTopics, m.MissingTopicEvents)
	}
	return m
}
