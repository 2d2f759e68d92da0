package relay

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/outboxtop/outboxtop/wire"
)

// Ordering is how the relay orders publication.
type Ordering string

const (
	// OrderAggregate publishes each aggregate's events in seq order (default).
	OrderAggregate Ordering = "aggregate"
	// OrderNone publishes in claim order with no per-aggregate guarantee.
	OrderNone Ordering = "none"
)

// CloudEventsMode says whether records carry CloudEvents' headers.
type CloudEventsMode string

const (
	CloudEventsOff    CloudEventsMode = "off"    // the relay's own headers only
	CloudEventsBeside CloudEventsMode = "beside" // CloudEvents' and the relay's own
	CloudEventsOnly   CloudEventsMode = "only"   // CloudEvents' instead of the relay's own
)

// defaultBatchBytes is BatchBytes's default, when MaxMessageBytes is smaller.
const defaultBatchBytes = 16 << 20

// Config tunes a relay. Zero fields take the defaults in DefaultConfig.
type Config struct {
	Schema        string
	BatchSize     int
	InFlight      int
	Lease         time.Duration
	MaxAttempts   int
	BackoffBase   time.Duration
	BackoffMax    time.Duration
	PollInterval  time.Duration
	WakeCooldown  time.Duration
	Ordering      Ordering
	TopicTemplate string
	// Topics bounds the topics the relay writes to, whether a row names its topic
	// or TopicTemplate makes it: patterns in which * stands for any run of
	// characters. An event to any other topic fails at once. Empty: every topic
	// but those Kafka and its ecosystem keep for themselves (names starting with
	// "__", _schemas, names starting with "_confluent", connect-configs,
	// connect-offsets, connect-status), which only a pattern that is itself such
	// a name allows ("__audit.*", "_schemas"; never "*").
	Topics          []string
	MaxMessageBytes int
	// BatchBytes bounds the payload bytes one claim loads into the relay (the
	// JSON text of each payload, as published). The claim returns payloads in
	// seq order while their sum stays within it, the first always; the
	// events past it are released at once, their attempt refunded, and
	// claimed again (in ordered mode with the events after them in their
	// aggregate). A payload larger than MaxMessageBytes is never loaded: its
	// event fails as too large. Default: 16 MiB, or MaxMessageBytes if larger.
	// A relay holds at most InFlight batches, so about InFlight × BatchBytes of
	// payloads.
	BatchBytes int
	// CloudEvents sets CloudEvents' headers on every record (Kafka binary
	// content mode, wire.CloudEventsHeaders): CloudEventsOff (the default),
	// CloudEventsBeside the relay's own headers, or CloudEventsOnly. A row's
	// own header that reads as one of them fails its event, as one that reads
	// as the relay's own does.
	CloudEvents CloudEventsMode
	// CloudEventsSource is ce_source's template: {aggregate_type} and
	// {event_type} are filled in. Default wire.DefaultCloudEventsSource.
	CloudEventsSource string
	// Layout is the records' shape: LayoutOutboxtop (the default) or
	// LayoutDebezium (layout.go). CloudEvents' headers, when on, are added to
	// either.
	Layout Layout
	// Key is the record key: KeyAggregateID (the default), KeyEventID, or
	// KeyPayloadPrefix and a dotted path into the payload (a string, number or
	// boolean there; an event whose payload lacks it fails at once). Kafka
	// orders one partition only: another key than the aggregate id keeps an
	// aggregate's events in order only when it is the same for all of them.
	Key string
	// PublishTimeout bounds how long a batch waits for Kafka's acknowledgements;
	// records still unacknowledged then count as failed (and, if the brokers do not
	// answer, as an outage).
	PublishTimeout time.Duration
	// Drain makes Run return once nothing is publishable. Events waiting for a
	// topic that does not exist, like failed ones, do not keep it running: it
	// logs them and returns.
	Drain bool
	// ShutdownTimeout bounds how long Run waits for in-flight batches after its
	// context is cancelled before it releases their leases. Records waiting for a
	// topic found missing are not waited for: their batches are released as soon
	// as the context is cancelled.
	ShutdownTimeout time.Duration
	// LockTimeout bounds how long a claim waits for a lock (it never waits for a
	// row lock; a table lock can hold it); a session frozen inside a claim is
	// ended by PostgreSQL after twice this. Heads another session holds locked
	// for longer are reported.
	LockTimeout time.Duration
	// SweepInterval is how often the relay clears blocked hints whose blocker is
	// gone without the relay seeing it (rows deleted by hand).
	SweepInterval time.Duration
	// Holder names this relay in the rows it claims (lease_holder), so an operator
	// sees which process holds a lease: "host:pid" by default (DefaultHolder). At
	// most 200 bytes.
	Holder string
	// HeartbeatInterval is how often the relay writes its row in outbox_relay
	// (state, in-flight events; migration 010), default 5s; readers call a row
	// gone after 3 intervals without a beat. Negative: no heartbeat.
	HeartbeatInterval time.Duration
	// Version is written in the heartbeat (the binary's version).
	Version string
	Logger  *slog.Logger
	Metrics *Metrics
}

// DefaultHolder is the Holder of a relay that sets none: the host name and the
// process id, "host:pid".
func DefaultHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// DefaultConfig holds the defaults.
var DefaultConfig = Config{
	Schema:          wire.DefaultSchema,
	BatchSize:       1000,
	InFlight:        4,
	Lease:           60 * time.Second,
	MaxAttempts:     10,
	BackoffBase:     time.Second,
	BackoffMax:      5 * time.Minute,
	PollInterval:    time.Second,
	WakeCooldown:    2 * time.Millisecond,
	Ordering:        OrderAggregate,
	TopicTemplate:   wire.DefaultTopicTemplate,
	MaxMessageBytes: 1_000_000,
	PublishTimeout:  20 * time.Second,
	ShutdownTimeout: 30 * time.Second,
	LockTimeout:     5 * time.Second,
	SweepInterval:   time.Minute,

	HeartbeatInterval: 5 * time.Second,
}

// WithDefaults returns c with every zero field set to its DefaultConfig value.
func (c Config) WithDefaults() Config { return c.withDefaults() }

// Kafka fills the producer settings of k that follow from this relay config and
// are still zero: the record size limit, the delivery timeout (the publish
// timeout) and a buffer for every in-flight batch twice over.
func (c Config) Kafka(k KafkaConfig) KafkaConfig {
	c = c.withDefaults()
	if k.MaxMessageBytes == 0 {
		k.MaxMessageBytes = c.MaxMessageBytes
	}
	if k.DeliveryTimeout == 0 {
		k.DeliveryTimeout = c.PublishTimeout
	}
	if k.MaxBufferedRecords == 0 {
		k.MaxBufferedRecords = c.BatchSize * c.InFlight * 2
	}
	return k
}

func (c Config) withDefaults() Config {
	d := DefaultConfig
	if c.Schema == "" {
		c.Schema = d.Schema
	}
	if c.BatchSize == 0 {
		c.BatchSize = d.BatchSize
	}
	if c.InFlight == 0 {
		c.InFlight = d.InFlight
	}
	if c.Lease == 0 {
		c.Lease = d.Lease
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = d.MaxAttempts
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = d.BackoffBase
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = d.BackoffMax
	}
	if c.PollInterval == 0 {
		c.PollInterval = d.PollInterval
	}
	if c.WakeCooldown == 0 {
		c.WakeCooldown = d.WakeCooldown
	}
	if c.Ordering == "" {
		c.Ordering = d.Ordering
	}
	if c.TopicTemplate == "" {
		c.TopicTemplate = d.TopicTemplate
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = d.MaxMessageBytes
	}
	if c.BatchBytes == 0 {
		c.BatchBytes = max(defaultBatchBytes, c.MaxMessageBytes)
	}
	if c.CloudEvents == "" {
		c.CloudEvents = CloudEventsOff
	}
	if c.CloudEventsSource == "" {
		c.CloudEventsSource = wire.DefaultCloudEventsSource
	}
	if c.Layout == "" {
		c.Layout = LayoutOutboxtop
	}
	if c.Key == "" {
		c.Key = KeyAggregateID
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = d.PublishTimeout
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = d.ShutdownTimeout
	}
	if c.LockTimeout == 0 {
		c.LockTimeout = d.LockTimeout
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = d.SweepInterval
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = d.HeartbeatInterval
	}
	if c.Holder == "" {
		c.Holder = DefaultHolder()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first setting that cannot work, as a *ConfigError
// naming the Config field.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	switch {
	case wire.ValidateSchema(c.Schema) != nil:
		return bad("Schema", "%q is not a schema name: use letters, digits and _ (at most 63, not starting with a digit)", c.Schema)
	case c.BatchSize < 1 || c.BatchSize > 100_000:
		return bad("BatchSize", "must be between 1 and 100000, not %d", c.BatchSize)
	case c.InFlight < 1 || c.InFlight > 64:
		return bad("InFlight", "must be between 1 and 64, not %d", c.InFlight)
	case c.Lease < time.Second:
		return bad("Lease", "must be at least 1s, not %v", c.Lease)
	case c.MaxAttempts < 1:
		return bad("MaxAttempts", "must be at least 1, not %d", c.MaxAttempts)
	case c.BackoffBase <= 0 || c.BackoffMax < c.BackoffBase:
		return bad("BackoffBase", "(%v) must be positive and at most BackoffMax (%v)", c.BackoffBase, c.BackoffMax)
	case c.PollInterval < 10*time.Millisecond:
		return bad("PollInterval", "must be at least 10ms, not %v", c.PollInterval)
	case c.Ordering != OrderAggregate && c.Ordering != OrderNone:
		return bad("Ordering", "must be aggregate or none, not %q", c.Ordering)
	case c.PublishTimeout < 100*time.Millisecond || c.PublishTimeout >= c.Lease:
		return bad("PublishTimeout", "must be at least 100ms and shorter than Lease (%v), not %v", c.Lease, c.PublishTimeout)
	case c.LockTimeout < 100*time.Millisecond:
		return bad("LockTimeout", "must be at least 100ms, not %v", c.LockTimeout)
	case c.SweepInterval < time.Second:
		return bad("SweepInterval", "must be at least 1s, not %v", c.SweepInterval)
	case c.HeartbeatInterval > 0 && (c.HeartbeatInterval < 100*time.Millisecond || c.HeartbeatInterval > time.Hour):
		return bad("HeartbeatInterval", "must be between 100ms and 1h (or negative: none), not %v", c.HeartbeatInterval)
	case len(c.Holder) > 200:
		return bad("Holder", "is %d bytes, at most 200", len(c.Holder))
	case c.MaxMessageBytes < 1024:
		return bad("MaxMessageBytes", "must be at least 1024, not %d", c.MaxMessageBytes)
	case c.CloudEvents != CloudEventsOff && c.CloudEvents != CloudEventsBeside && c.CloudEvents != CloudEventsOnly:
		return bad("CloudEvents", "must be off, beside or only, not %q", c.CloudEvents)
	case strings.IndexFunc(c.CloudEventsSource, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return bad("CloudEventsSource", "%q: a URI reference holds no white space or control characters", c.CloudEventsSource)
	case c.Layout != LayoutOutboxtop && c.Layout != LayoutDebezium:
		return bad("Layout", "must be outboxtop or debezium, not %q", c.Layout)
	case validateKey(c.Key) != nil:
		return bad("Key", "%v", validateKey(c.Key))
	}
	if err := wire.ValidateTopicTemplate(c.TopicTemplate); err != nil {
		return bad("TopicTemplate", "%q: %v", c.TopicTemplate, err)
	}
	return validateTopicPatterns(c.Topics)
}

// ConfigError is a Config value that Validate refuses. Its text names fields
// as Config does (BatchSize, Lease); a command line maps them to its own
// names.
type ConfigError struct {
	Field   string // the Config field, "BatchSize"
	Problem string // what is wrong with it, which may name other fields
}

func (e *ConfigError) Error() string { return e.Field + " " + e.Problem }

// ErrStopped is returned by Run in drain mode when it stopped on an error.
var ErrStopped = errors.New("relay stopped")
