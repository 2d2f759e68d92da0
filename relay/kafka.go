package relay

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/outboxtop/outboxtop/internal/securefile"
)

// KafkaConfig is how the relay reaches Kafka.
type KafkaConfig struct {
	Brokers  []string
	ClientID string

	TLS                   bool
	TLSCAFile             string
	TLSCertFile           string
	TLSKeyFile            string
	TLSInsecureSkipVerify bool

	SASLMechanism string // "", plain, scram-sha-256, scram-sha-512
	SASLUser      string
	SASLPassword  string // never logged

	Compression      string // none, gzip, snappy, lz4, zstd
	MaxMessageBytes  int
	DeliveryTimeout  time.Duration
	AutoCreateTopics bool
	// MaxBufferedRecords bounds the producer's buffer; give at least
	// batch size × in-flight batches.
	MaxBufferedRecords int

	// Extra options, appended last (tests use this to inject a dialer).
	Extra []kgo.Opt
}

// NewKafkaClient builds the franz-go producer the relay needs: acks=all,
// idempotent, batches capped at MaxMessageBytes, deliveries bounded by
// DeliveryTimeout so an outage surfaces as errors instead of a silent stall.
func NewKafkaClient(c KafkaConfig) (*kgo.Client, error) {
	if len(c.Brokers) == 0 {
		return nil, &ConfigError{Field: "Brokers", Problem: "is empty: no Kafka broker to reach"}
	}
	for _, b := range c.Brokers {
		if strings.TrimSpace(b) == "" || !strings.Contains(b, ":") {
			return nil, fmt.Errorf("invalid broker address %q: want host:port", b)
		}
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultConfig.MaxMessageBytes
	}
	if c.DeliveryTimeout == 0 {
		c.DeliveryTimeout = 20 * time.Second
	}
	if c.MaxBufferedRecords == 0 {
		c.MaxBufferedRecords = DefaultConfig.BatchSize * DefaultConfig.InFlight * 2
	}
	clientID := c.ClientID
	if clientID == "" {
		clientID = "outboxtop"
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.ClientID(clientID),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchMaxBytes(int32(c.MaxMessageBytes)),
		kgo.RecordDeliveryTimeout(c.DeliveryTimeout),
		kgo.MaxBufferedRecords(c.MaxBufferedRecords),
		kgo.ProducerLinger(0),
		// Time-bounded delivery over the idempotent producer's wait-forever default:
		// the relay is at-least-once anyway, and a record that was cancelled but
		// written after all is a duplicate the inbox absorbs, while a batch that
		// never ends would hold its lease through a whole outage.
		kgo.AllowIdempotentProduceCancellation(),
	}
	if c.AutoCreateTopics {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	}
	codec, err := compression(c.Compression)
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if c.TLS || c.TLSCAFile != "" || c.TLSCertFile != "" {
		cfg, err := tlsConfig(c)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	switch strings.ToLower(c.SASLMechanism) {
	case "":
	case "plain":
		opts = append(opts, kgo.SASL(plain.Auth{User: c.SASLUser, Pass: c.SASLPassword}.AsMechanism()))
	case "scram-sha-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.SASLUser, Pass: c.SASLPassword}.AsSha256Mechanism()))
	case "scram-sha-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.SASLUser, Pass: c.SASLPassword}.AsSha512Mechanism()))
	default:
		return nil, &ConfigError{Field: "SASLMechanism", Problem: fmt.Sprintf("must be plain, scram-sha-256 or scram-sha-512, not %q", c.SASLMechanism)}
	}
	if c.SASLMechanism != "" && (c.SASLUser == "" || c.SASLPassword == "") {
		return nil, &ConfigError{Field: "SASLMechanism", Problem: "needs SASLUser and SASLPassword"}
	}
	opts = append(opts, c.Extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	return cl, nil
}

func compression(name string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(name) {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.NoCompression(), &ConfigError{Field: "Compression", Problem: fmt.Sprintf("must be none, gzip, snappy, lz4 or zstd, not %q", name)}
}

// maxTLSFile bounds a CA bundle, certificate or key file (a path like /dev/zero
// must not fill the memory); a system CA bundle is a few hundred KiB.
const maxTLSFile = 4 << 20

// tlsConfig reads the files through securefile: a named pipe or a device is
// refused at once, and the key may not be readable by group or others.
func tlsConfig(c KafkaConfig) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.TLSInsecureSkipVerify} //nolint:gosec // operator's explicit choice
	if c.TLSCAFile != "" {
		pem, err := securefile.Read("TLSCAFile", c.TLSCAFile, securefile.Plain, maxTLSFile)
		if err != nil {
			return nil, fileError("TLSCAFile", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &ConfigError{Field: "TLSCAFile", Problem: fmt.Sprintf("%s: no PEM certificate found", c.TLSCAFile)}
		}
		cfg.RootCAs = pool
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return nil, &ConfigError{Field: "TLSCertFile", Problem: "and TLSKeyFile go together"}
	}
	if c.TLSCertFile != "" {
		certPEM, err := securefile.Read("TLSCertFile", c.TLSCertFile, securefile.Plain, maxTLSFile)
		if err != nil {
			return nil, fileError("TLSCertFile", err)
		}
		keyPEM, err := securefile.Read("TLSKeyFile", c.TLSKeyFile, securefile.Secret, maxTLSFile)
		if err != nil {
			return nil, fileError("TLSKeyFile", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("loading the Kafka client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// fileError is securefile's error about the file a KafkaConfig field names, as
// a ConfigError of that field.
func fileError(field string, err error) error {
	return &ConfigError{Field: field, Problem: strings.TrimLeft(strings.TrimPrefix(err.Error(), field), ": ")}
}
