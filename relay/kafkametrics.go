package relay

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kprom"
)

// KafkaMetrics is the client option that exports franz-go's own producer metrics
// (plugin/kprom) on reg, beside the relay's, under outboxtop_kafka_: connects and
// connect errors, bytes and errors written and read, produced batches, records
// and bytes, records and bytes buffered in the client, and request latency
// (outboxtop_kafka_request_duration_e2e_seconds). Add it to KafkaConfig.Extra.
//
// Labels stay bounded: node_id (one per broker) only. No topic label, because a
// row's topic column may name any number of topics.
func KafkaMetrics(reg prometheus.Registerer) kgo.Opt {
	m := kprom.NewMetrics("outboxtop_kafka",
		kprom.Registerer(reg),
		kprom.BrokerLabels(kprom.BrokerNodeID),
		kprom.FetchAndProduceDetail(kprom.ByNode, kprom.Batches, kprom.Records, kprom.UncompressedBytes, kprom.CompressedBytes),
		kprom.Histograms(kprom.RequestDurationE2E),
	)
	return kgo.WithHooks(m)
}
