package cmd

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/app"
	"github.com/outboxtop/outboxtop/relay"
)

// --topics is a comma-separated list of patterns, also from OUTBOXTOP_TOPICS; a
// bad pattern is a usage error naming the flag.
func TestTopicsFlagAndVariable(t *testing.T) {
	t.Parallel()
	resolve := func(env map[string]string, args ...string) (*relayFlags, error) {
		var errb bytes.Buffer
		io := IO{Out: &errb, Err: &errb, Getenv: func(k string) string { return env[k] }}
		fs := newFlagSet("relay", io)
		f := new(relayFlags)
		f.register(fs)
		if err := parse(fs, append([]string{"--brokers", "127.0.0.1:1"}, args...), io); err != nil {
			return nil, err
		}
		if err := f.resolve("public", io); err != nil {
			return f, err
		}
		return f, usageOf(app.Config{Schema: "public", Relay: &f.cfg}.Validate())
	}
	f, err := resolve(nil, "--topics", "orders.*, billing ,")
	if err != nil || !slices.Equal(f.cfg.Topics, []string{"orders.*", "billing"}) {
		t.Errorf("--topics: %q, %v", f.cfg.Topics, err)
	}
	f, err = resolve(map[string]string{"OUTBOXTOP_TOPICS": "audit.*"})
	if err != nil || !slices.Equal(f.cfg.Topics, []string{"audit.*"}) {
		t.Errorf("OUTBOXTOP_TOPICS: %q, %v", f.cfg.Topics, err)
	}
	f, err = resolve(nil)
	if err != nil || f.cfg.Topics != nil {
		t.Errorf("no --topics: %q, %v", f.cfg.Topics, err)
	}
	if _, err := resolve(nil, "--topics", "ok,bad topic"); err == nil || !strings.Contains(err.Error(), `--topics pattern "bad topic"`) {
		t.Errorf("a bad pattern: %v", err)
	}
}

// The relay's Validate names Config fields; the commands say the same in flag
// names. Every refusal Validate can give is tried: the field it names has a
// flag, the flag is registered, and no Config field name is left in the text.
func TestRelayConfigErrorsNameTheirFlags(t *testing.T) {
	t.Parallel()
	fs := newFlagSet("relay", IO{Out: io.Discard, Err: io.Discard, Getenv: func(string) string { return "" }})
	new(relayFlags).register(fs)
	fs.String("schema", "", "")
	for field, bad := range map[string]func(*relay.Config){
		"Schema":            func(c *relay.Config) { c.Schema = "1x" },
		"BatchSize":         func(c *relay.Config) { c.BatchSize = -1 },
		"InFlight":          func(c *relay.Config) { c.InFlight = 65 },
		"Lease":             func(c *relay.Config) { c.Lease = time.Millisecond },
		"MaxAttempts":       func(c *relay.Config) { c.MaxAttempts = -1 },
		"BackoffBase":       func(c *relay.Config) { c.BackoffBase, c.BackoffMax = time.Minute, time.Second },
		"PollInterval":      func(c *relay.Config) { c.PollInterval = time.Millisecond },
		"Ordering":          func(c *relay.Config) { c.Ordering = "random" },
		"PublishTimeout":    func(c *relay.Config) { c.PublishTimeout = time.Hour },
		"LockTimeout":       func(c *relay.Config) { c.LockTimeout = time.Millisecond },
		"SweepInterval":     func(c *relay.Config) { c.SweepInterval = time.Millisecond },
		"HeartbeatInterval": func(c *relay.Config) { c.HeartbeatInterval = time.Millisecond },
		"Holder":            func(c *relay.Config) { c.Holder = strings.Repeat("h", 201) },
		"MaxMessageBytes":   func(c *relay.Config) { c.MaxMessageBytes = 10 },
		"TopicTemplate":     func(c *relay.Config) { c.TopicTemplate = "bad topic" },
		"Topics":            func(c *relay.Config) { c.Topics = []string{"ok", ""} },
	} {
		var cfg relay.Config
		bad(&cfg)
		err := cfg.Validate()
		var ce *relay.ConfigError
		if !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("%s: Validate gave %v, want a ConfigError for the field", field, err)
			continue
		}
		flag, ok := relayFlagOf[field]
		if !ok {
			t.Errorf("%s: no flag maps to the field", field)
			continue
		}
		if name, isFlag := strings.CutPrefix(flag, "--"); isFlag && fs.Lookup(name) == nil {
			t.Errorf("%s maps to %s, which is not a flag", field, flag)
		}
		msg := inFlagWords(err).Error()
		if !strings.HasPrefix(msg, flag) {
			t.Errorf("%s: %q does not start with %s", field, msg, flag)
		}
		for _, f := range reflect.VisibleFields(reflect.TypeFor[relay.Config]()) {
			if strings.Contains(msg, f.Name+" ") || strings.HasSuffix(msg, f.Name) {
				t.Errorf("%s: %q still names the Config field %s", field, msg, f.Name)
			}
		}
	}
}

// The Kafka client's refusals name KafkaConfig fields; through inFlagWords the
// user reads the flags they set, and no field name is left.
func TestKafkaConfigErrorsSpeakFlags(t *testing.T) {
	t.Parallel()
	for want, k := range map[string]relay.KafkaConfig{
		"--kafka-compression must be":    {Brokers: []string{"b:9092"}, Compression: "brotli"},
		"--kafka-sasl-mechanism must be": {Brokers: []string{"b:9092"}, SASLMechanism: "kerberos"},
		"--kafka-sasl-mechanism needs --kafka-sasl-user and a password (OUTBOXTOP_KAFKA_SASL_PASSWORD": {Brokers: []string{"b:9092"}, SASLMechanism: "plain"},
		"--kafka-tls-cert and --kafka-tls-key go together":                                             {Brokers: []string{"b:9092"}, TLSCertFile: "/x.pem"},
		"--kafka-tls-ca stat /nonexistent/ca.pem":                                                      {Brokers: []string{"b:9092"}, TLSCAFile: "/nonexistent/ca.pem"},
		"--brokers (or KAFKA_BROKERS) is empty":                                                        {},
	} {
		_, err := relay.NewKafkaClient(k)
		var ce *relay.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%+v: %v, want a ConfigError", k, err)
			continue
		}
		msg := inFlagWords(err).Error()
		if !strings.HasPrefix(msg, want) {
			t.Errorf("%+v: %q, want it to start %q", k, msg, want)
		}
		for _, f := range reflect.VisibleFields(reflect.TypeFor[relay.KafkaConfig]()) {
			if strings.Contains(msg, f.Name+" ") || strings.HasSuffix(msg, f.Name) {
				t.Errorf("%q still names the KafkaConfig field %s", msg, f.Name)
			}
		}
	}
}
