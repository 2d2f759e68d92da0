package cmd

import (
	"errors"
	"regexp"
	"strings"

	"github.com/spf13/pflag"

	"github.com/outboxtop/outboxtop/relay"
	"github.com/outboxtop/outboxtop/wire"
)

// relayFlags are the relay's and Kafka's settings, shared by the console (relay
// embedded), --headless and the demo.
type relayFlags struct {
	cfg   relay.Config
	kafka relay.KafkaConfig

	brokers          string
	ordering         string
	cloudEvents      string
	layout           string
	topics           string
	saslPasswordFile string
}

func (f *relayFlags) register(fs *pflag.FlagSet) {
	d := relay.DefaultConfig
	f.registerKafka(fs)
	fs.StringVar(&f.kafka.Compression, "kafka-compression", "none", "producer compression: none, gzip, snappy, lz4, zstd")
	fs.IntVar(&f.cfg.MaxMessageBytes, "kafka-max-message-bytes", d.MaxMessageBytes, "largest record the relay produces; larger events are failed at once (keep ≤ the topic's max.message.bytes)")
	fs.BoolVar(&f.kafka.AutoCreateTopics, "kafka-auto-create-topics", false, "ask the brokers to create missing topics (where they allow it)")
	fs.StringVar(&f.cfg.TopicTemplate, "topic-template", d.TopicTemplate, "topic for rows without a topic; placeholders {aggregate_type}, {event_type}")
	fs.StringVar(&f.topics, "topics", "", "topics the relay may write to, comma-separated, * for any run of characters (orders.*,billing); an event to another fails at once. Default: all but the internal topics of Kafka (__*), the schema registry (_schemas), Confluent (_confluent*) and Kafka Connect (connect-configs, connect-offsets, connect-status), which only a pattern naming them allows")
	fs.StringVar(&f.ordering, "ordering", string(d.Ordering), "aggregate: each aggregate's events in seq order; none: no order, more throughput")
	fs.StringVar(&f.cloudEvents, "cloudevents", string(relay.CloudEventsOff), "CloudEvents headers on every record (Kafka binary content mode: ce_id, ce_type, ce_source, ce_subject, ce_time, content-type): off, beside the relay's own headers, or only")
	fs.StringVar(&f.layout, "layout", string(relay.LayoutOutboxtop), "records' shape: outboxtop, or debezium (what Debezium's outbox event router emits by default: topic outbox.event.{aggregate_type} unless --topic-template is given, key the aggregate id, one header id)")
	fs.StringVar(&f.cfg.Key, "key", relay.KeyAggregateID, "record key: aggregate_id, event_id, or payload:<field>[.<field>…] (Kafka orders each partition, so only a key the same for all of an aggregate's events keeps their order)")
	fs.StringVar(&f.cfg.CloudEventsSource, "cloudevents-source", wire.DefaultCloudEventsSource, "ce_source of each record, a URI reference; placeholders {aggregate_type}, {event_type}")
	fs.IntVar(&f.cfg.BatchSize, "batch-size", d.BatchSize, "events claimed per batch")
	fs.IntVar(&f.cfg.InFlight, "in-flight", d.InFlight, "batches published at once")
	fs.DurationVar(&f.cfg.Lease, "lease", d.Lease, "how long a claimed batch is owned before another relay may take it (renewed while publishing)")
	fs.DurationVar(&f.cfg.PublishTimeout, "publish-timeout", d.PublishTimeout, "how long a batch waits for Kafka's acknowledgements")
	fs.IntVar(&f.cfg.MaxAttempts, "max-attempts", d.MaxAttempts, "attempts before an event is failed (broker outages do not count)")
	fs.DurationVar(&f.cfg.BackoffBase, "backoff-base", d.BackoffBase, "first retry delay; doubles per attempt, jittered")
	fs.DurationVar(&f.cfg.BackoffMax, "backoff-max", d.BackoffMax, "longest retry delay")
	fs.DurationVar(&f.cfg.PollInterval, "poll-interval", d.PollInterval, "longest wait between claims when no NOTIFY arrives")
	fs.DurationVar(&f.cfg.LockTimeout, "lock-timeout", d.LockTimeout, "longest wait of a claim for a lock; a relay frozen inside a claim is ended by PostgreSQL after twice this")
	fs.DurationVar(&f.cfg.SweepInterval, "sweep-interval", d.SweepInterval, "how often waiting events whose blocker vanished (deleted by hand) are brought back")
	fs.DurationVar(&f.cfg.HeartbeatInterval, "heartbeat-interval", d.HeartbeatInterval, "how often the relay writes its row in outbox_relay (state, in-flight events); gone after 3 missed; negative: none")
	fs.DurationVar(&f.cfg.ShutdownTimeout, "shutdown-timeout", d.ShutdownTimeout, "on SIGINT/SIGTERM, wait this long for in-flight batches, then release them")
}

// registerKafka registers how to reach Kafka (brokers, TLS, SASL): all that a
// command which only reads from Kafka needs.
func (f *relayFlags) registerKafka(fs *pflag.FlagSet) {
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
}

// resolve completes the configuration from the environment.
func (f *relayFlags) resolve(schema string, io IO) error {
	if err := f.resolveKafka(io); err != nil {
		return err
	}
	if len(f.kafka.Brokers) == 0 {
		return usagef("no Kafka brokers: set --brokers or KAFKA_BROKERS")
	}
	f.cfg.Ordering = relay.Ordering(f.ordering)
	f.cfg.CloudEvents = relay.CloudEventsMode(f.cloudEvents)
	f.cfg.Layout = relay.Layout(f.layout)
	f.cfg.Topics = nil
	for _, p := range strings.Split(f.topics, ",") {
		if p = strings.TrimSpace(p); p != "" {
			f.cfg.Topics = append(f.cfg.Topics, p)
		}
	}
	f.cfg.Schema = schema
	f.cfg.Version = Version
	return nil // checked once, by the lifecycle that opens the relay (app.Config.Validate)
}

// resolveKafka completes the Kafka settings from the environment and checks
// them; no brokers is not an error here.
func (f *relayFlags) resolveKafka(io IO) error {
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
	if f.kafka.TLSCAFile != "" || f.kafka.TLSCertFile != "" {
		f.kafka.TLS = true
	}
	if f.kafka.TLSKeyFile != "" {
		if err := checkSecretFile("--kafka-tls-key", f.kafka.TLSKeyFile, maxKeyFile); err != nil {
			return usagef("%v", err)
		}
	}
	f.kafka.SASLPassword = io.Getenv("OUTBOXTOP_KAFKA_SASL_PASSWORD")
	if f.saslPasswordFile != "" {
		b, err := readSecretFile("--kafka-sasl-password-file", f.saslPasswordFile, maxPasswordFile)
		if err != nil {
			return usagef("%v", err)
		}
		f.kafka.SASLPassword = strings.TrimRight(string(b), "\r\n")
	}
	return nil
}

// refuseRelayFlagsWithoutRelay refuses, under --no-relay, a relay flag given on
// the command line: it would configure nothing. How to reach Kafka (brokers,
// TLS, SASL) is still used there, by the Consumers view's lag. The same setting
// from its OUTBOXTOP_ variable passes (an environment file shared with the
// relay).
func refuseRelayFlagsWithoutRelay(fs *pflag.FlagSet, io IO) error {
	relayOnly := pflag.NewFlagSet("", pflag.ContinueOnError)
	new(relayFlags).register(relayOnly)
	reach := pflag.NewFlagSet("", pflag.ContinueOnError)
	new(relayFlags).registerKafka(reach)
	var err error
	relayOnly.VisitAll(func(rf *pflag.Flag) {
		if reach.Lookup(rf.Name) != nil {
			return
		}
		if f := fs.Lookup(rf.Name); err == nil && f != nil && f.Changed && io.Getenv(EnvName(f.Name)) == "" {
			err = usagef("--%s configures the embedded relay, and --no-relay runs none", f.Name)
		}
	})
	return err
}

// relayFlagOf is the flag that sets each relay.Config field a ConfigError may
// name (Schema is the commands' own --schema).
var relayFlagOf = map[string]string{
	"Schema": "--schema", "BatchSize": "--batch-size", "InFlight": "--in-flight", "Lease": "--lease",
	"MaxAttempts": "--max-attempts", "BackoffBase": "--backoff-base", "BackoffMax": "--backoff-max",
	"PollInterval": "--poll-interval", "Ordering": "--ordering", "PublishTimeout": "--publish-timeout",
	"LockTimeout": "--lock-timeout", "SweepInterval": "--sweep-interval", "HeartbeatInterval": "--heartbeat-interval",
	"Holder": "the relay's holder name", "MaxMessageBytes": "--kafka-max-message-bytes",
	"TopicTemplate": "--topic-template", "Topics": "--topics", "CloudEvents": "--cloudevents", "CloudEventsSource": "--cloudevents-source",
	"Layout": "--layout", "Key": "--key",
	// KafkaConfig's.
	"Brokers": "--brokers (or KAFKA_BROKERS)", "Compression": "--kafka-compression",
	"SASLMechanism": "--kafka-sasl-mechanism", "SASLUser": "--kafka-sasl-user",
	"SASLPassword": "a password (OUTBOXTOP_KAFKA_SASL_PASSWORD or --kafka-sasl-password-file)",
	"TLSCAFile":    "--kafka-tls-ca", "TLSCertFile": "--kafka-tls-cert", "TLSKeyFile": "--kafka-tls-key",
}

var relayFieldWord = regexp.MustCompile(`\b[A-Z][A-Za-z]+\b`)

// inFlagWords says a relay.ConfigError in err in the flags' names: the relay
// speaks of its Config and KafkaConfig fields, a user of this binary set
// flags. The rest of err's text is kept.
func inFlagWords(err error) error {
	var ce *relay.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	words := relayFieldWord.ReplaceAllStringFunc(ce.Error(), func(w string) string {
		if flag, ok := relayFlagOf[w]; ok {
			return flag
		}
		return w
	})
	return errors.New(strings.Replace(err.Error(), ce.Error(), words, 1))
}
