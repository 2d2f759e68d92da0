package cmd

import (
	"strings"
	"testing"
	"time"
)

// consoleConfig parses args as the console does and returns its application's
// configuration.
func consoleConfig(t *testing.T, args ...string) consoleFlags {
	t.Helper()
	var c consoleFlags
	io := IO{Err: &strings.Builder{}, Getenv: func(string) string { return "" }}
	fs := newFlagSet("", io)
	c.register(fs)
	if err := parse(fs, args, io); err != nil {
		t.Fatal(err)
	}
	return c
}

// Every flag the console accepts reaches its application: the metrics server
// and the housekeeping run beside the embedded relay as they do headless
// (internal/app serves and runs them; its tests show that).
func TestConsoleHonoursMetricsAndHousekeeping(t *testing.T) {
	t.Parallel()
	c := consoleConfig(t, "--brokers", "k:9092", "--metrics-addr", "127.0.0.1:9464",
		"--archive-after", "2h", "--archive-retention", "720h", "--retention-interval", "30s", "--read-only")
	cfg, err := c.appConfig(IO{Err: &strings.Builder{}, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MetricsAddr != "127.0.0.1:9464" {
		t.Errorf("metrics address %q", cfg.MetricsAddr)
	}
	if h := cfg.Housekeeping; h.ArchiveAfter != 2*time.Hour || h.Retention != 720*time.Hour || h.Every != 30*time.Second {
		t.Errorf("housekeeping %+v", h)
	}
	if cfg.Relay == nil || cfg.Relay.ShutdownTimeout != consoleShutdown || len(cfg.Kafka.Brokers) != 1 {
		t.Errorf("relay %+v, brokers %v", cfg.Relay, cfg.Kafka.Brokers)
	}
	if !cfg.ReadOnly {
		t.Error("--read-only lost")
	}
}

// What a mode cannot honour it refuses, on one line, before connecting anywhere.
func TestModesRefuseFlagsTheyCannotHonour(t *testing.T) {
	t.Parallel()
	dsn := "postgres://u:hunter2@127.0.0.1:1/db"
	for _, args := range [][]string{
		{"--no-relay", "--archive-after", "1h", "--dsn", dsn},
		{"--no-relay", "--archive-retention", "1h", "--dsn", dsn},
		{"--brokers", "k:9092", "--log-format", "xml", "--dsn", dsn},
		{"--headless", "--actor", "alice", "--brokers", "k:9092", "--dsn", dsn},
		{"--headless", "--read-only", "--brokers", "k:9092", "--dsn", dsn},
		{"--brokers", "k:9092", "--archive-after", "1h", "--retention-interval", "10ms", "--dsn", dsn},
		{"serve", "--host-key", "k", "--authorized-keys", "a", "--no-relay", "--archive-after", "1h", "--dsn", dsn},
		{"--no-relay", "--batch-size", "10", "--dsn", dsn},
		{"--no-relay", "--kafka-compression", "gzip", "--dsn", dsn},
		{"serve", "--host-key", "k", "--authorized-keys", "a", "--no-relay", "--ordering", "none", "--dsn", dsn},
	} {
		checkUsageError(t, "hunter2", args...)
	}
	// From the environment the same setting passes: it reaches the connection.
	r := run(t, map[string]string{"OUTBOXTOP_BATCH_SIZE": "10"}, "--no-relay", "--dsn", dsn, "--connect-timeout", "1s")
	if r.code != ExitFailure || !strings.Contains(r.err, "cannot connect") {
		t.Errorf("--no-relay with OUTBOXTOP_BATCH_SIZE: exit %d, %q", r.code, r.err)
	}
	// How to reach Kafka is not the relay's alone: the Consumers view reads lag.
	r = run(t, nil, "--no-relay", "--brokers", "k:9092", "--dsn", dsn, "--connect-timeout", "1s")
	if r.code != ExitFailure || !strings.Contains(r.err, "cannot connect") {
		t.Errorf("--no-relay with --brokers: exit %d, %q", r.code, r.err)
	}
}
