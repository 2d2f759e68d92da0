package cli

import (
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/outboxtop/outboxtop/relay"
)

// relayFlags are the relay's and Kafka's settings, shared by the console (relay
// embedded), --headless and the demo.
type relayFlags struct {
	cfg   relay.Config
	kafka relay.KafkaConfig

	brokers          string
	ordering         string
	saslPasswordFile string
}

func (f *relayFlags) register(fs *pflag.FlagSet) {
	d := relay.DefaultConfig
	fs.StringVar(&f.brokers, "brokers", "", "Kafka seed brokers, comma-separated host:port (else KAFKA_BROKERS)")
	fs.StringVar(&f.kafka.ClientID, "kafka-client-id", "outboxtop", "Kafka client id")
	fs.BoolVar(&f.kafka.TLS, "kafka-tls", false, "connect to Kafka with TLS")
	fs.StringVar(&f.kafka.TLSCAFile, "kafka-tls-ca", "", "PEM file of CAs to trust for Kafka (implies --kafka-tls)")
	fs.StringVar(&f.kafka.TLSCertFile, "kafka-tls-cert", "", "PEM client certificate for Kafka (implies --kafka-tls)")
	fs.StringVar(&f.kafka.TLSKeyFile, "kafka-tls-key", "", "PEM client key for Kafka")
	fs.BoolVar(&f.kafka.TLSInsecureSkipVerify, "kafka-tls-insecure-skip-verify", false, "do not verify the brokers' certificates (testing only)")
	fs.StringVar(&f.kafka.SASLMechanism, "kafka-sasl-mechanism", "", "SASL mechanism: plain, scram-sha-256 or scram-sha-512")
	fs.StringVar(&f.kafka.SASLUser, "kafka-sasl-user", "", "SASL user")
	fs.StringVar(&f.saslPasswordFile, "kafka-sasl-password-file", "", "file holding the SASL password (else OUTBOXTOP_KAFKA_SASL_PASSWORD)")
	fs.StringVar(&f.kafka.Compression, "kafka-compression", "none", "producer compression: none, gzip, snappy, lz4, zstd")
	fs.IntVar(&f.cfg.MaxMessageBytes, "kafka-max-message-bytes", d.MaxMessageBytes, "largest record the relay produces; larger events are failed at once (keep ≤ the topic's max.message.bytes)")
	fs.BoolVar(&f.kafka.AutoCreateTopics, "kafka-auto-create-topics", false, "ask the brokers to create missing topics (where they allow it)")
	fs.StringVar(&f.cfg.TopicTemplate, "topic-template", d.TopicTemplate, "topic for rows without a topic; placeholders {aggregate_type}, {event_type}")
	fs.StringVar(&f.ordering, "ordering", string(d.Ordering), "aggregate: each aggregate's events in seq order; none: no order, more throughput")
	fs.IntVar(&f.cfg.BatchSize, "batch-size", d.BatchSize, "events claimed per batch")
	fs.IntVar(&f.cfg.InFlight, "in-flight", d.InFlight, "batches published at once")
	fs.DurationVar(&f.cfg.Lease, "lease", d.Lease, "how long a claimed batch is owned before another relay may take it (renewed while publishing)")
	fs.DurationVar(&f.cfg.PublishTimeout, "publish-timeout", d.PublishTimeout, "how long a batch waits for Kafka's acknowledgements")
	fs.IntVar(&f.cfg.MaxAttempts, "max-attempts", d.MaxAttempts, "attempts before an event is failed (broker outages do not count)")
	fs.DurationVar(&f.cfg.BackoffBase, "backoff-base", d.BackoffBase, "first retry delay; doubles per attempt, jittered")
	fs.DurationVar(&f.cfg.BackoffMax, "backoff-max", d.BackoffMax, "longest retry delay")
	fs.DurationVar(&f.cfg.PollInterval, "poll-interval", d.PollInterval, "longest wait between claims when no NOTIFY arrives")
	fs.DurationVar(&f.cfg.ShutdownTimeout, "shutdown-timeout", d.ShutdownTimeout, "on SIGINT/SIGTERM, wait this long for in-flight batches, then release them")
}

// resolve completes the configuration from the environment and checks it.
func (f *relayFlags) resolve(schema string, io IO) error {
	brokers := f.brokers
	if brokers == "" {
		brokers = io.Getenv("KAFKA_BROKERS")
	}
	f.kafka.Brokers = nil
	for _, b := range strings.Split(brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			f.kafka.Brokers = append(f.kafka.Brokers, b)
		}
	}
	if len(f.kafka.Brokers) == 0 {
		return usagef("no Kafka brokers: set --brokers or KAFKA_BROKERS")
	}
	f.cfg.Ordering = relay.Ordering(f.ordering)
	f.cfg.Schema = schema
	if err := f.cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	f.kafka.MaxMessageBytes, f.kafka.DeliveryTimeout, f.kafka.MaxBufferedRecords = 0, 0, 0
	f.kafka = f.cfg.Kafka(f.kafka)
	if f.kafka.TLSCAFile != "" || f.kafka.TLSCertFile != "" {
		f.kafka.TLS = true
	}
	f.kafka.SASLPassword = io.Getenv("OUTBOXTOP_KAFKA_SASL_PASSWORD")
	if f.saslPasswordFile != "" {
		b, err := os.ReadFile(f.saslPasswordFile)
		if err != nil {
			return usagef("--kafka-sasl-password-file: %v", err)
		}
		f.kafka.SASLPassword = strings.TrimRight(string(b), "\r\n")
	}
	return nil
}
