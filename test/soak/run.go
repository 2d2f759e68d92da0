package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/demo"
	"github.com/outboxtop/outboxtop/internal/pgtemp"
	"github.com/outboxtop/outboxtop/outbox"
)

type soakConfig struct {
	duration   time.Duration
	brokers    string
	kafkaCtl   string
	outage     time.Duration // how long the broker is stopped
	rate       float64
	relays     int
	lease      time.Duration
	batch      int
	work       string
	binary     string
	drainLimit time.Duration
}

// runReport is what the run hands the checker, besides the database and Kafka.
type runReport struct {
	Duration      string        `json:"duration"`
	Relays        int           `json:"relays"`
	Rate          float64       `json:"rate"`
	Lease         string        `json:"lease"`
	Brokers       string        `json:"brokers"`
	Topics        []string      `json:"topics"`
	MaxBacklog    int64         `json:"max_backlog"`
	MaxBlocked    int64         `json:"max_blocked"`
	WriteErrors   int64         `json:"write_errors"`
	Drain         float64       `json:"drain_seconds"`
	Faults        []faultResult `json:"faults"`
	RelayProblems []string      `json:"relay_problems"`
	RelayRestarts []string      `json:"relay_restarts"`
	Problems      []string      `json:"problems"`
}

type faultResult struct {
	Name     string  `json:"name"`
	At       float64 `json:"at"`
	Outage   float64 `json:"outage"`
	Recovery float64 `json:"recovery"` // seconds; -1: not recovered
	Note     string  `json:"note"`
}

type soak struct {
	cfg     soakConfig
	start   time.Time
	bin     string
	dsn     string
	cluster *pgtemp.Cluster
	pool    *pgxpool.Pool // the harness's own: watcher, recovery
	orders  *demo.Orders
	relays  []*relay
	env     []string // for the broker control script

	mu     sync.Mutex
	report runReport
	wg     sync.WaitGroup
}

func (s *soak) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "soak %6.1fs  %s\n", time.Since(s.start).Seconds(), fmt.Sprintf(format, args...))
}

func runSoak(args []string) int {
	var cfg soakConfig
	fs := pflag.NewFlagSet("soak", pflag.ContinueOnError)
	fs.DurationVar(&cfg.duration, "duration", 2*time.Minute, "how long the order service writes while faults run")
	fs.StringVar(&cfg.brokers, "brokers", "127.0.0.1:19092", "the real Kafka broker (scripts/kafka start)")
	fs.StringVar(&cfg.kafkaCtl, "kafka-ctl", "scripts/kafka", "script with stop and restart verbs for the broker (KAFKA_PORT is set from --brokers); empty skips the broker fault")
	fs.Float64Var(&cfg.rate, "rate", 300, "events per second the order service commits")
	fs.DurationVar(&cfg.outage, "broker-outage", 3*time.Second, "how long the broker stays stopped (minutes: scripts/soak --duration 6m --broker-outage 3m)")
	fs.IntVar(&cfg.relays, "relays", 3, "relay processes")
	fs.DurationVar(&cfg.lease, "lease", 5*time.Second, "the relays' --lease; the zombie is stopped for lease + 2s")
	fs.IntVar(&cfg.batch, "batch-size", 200, "the relays' --batch-size")
	fs.StringVar(&cfg.work, "work", "", "directory for relay logs and the report (default: a new temp directory)")
	fs.StringVar(&cfg.binary, "binary", "", "outboxtop binary to run (default: go build one)")
	fs.DurationVar(&cfg.drainLimit, "drain-timeout", 3*time.Minute, "give up waiting for the relays to drain after this long")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	if cfg.relays < 3 {
		fmt.Fprintln(os.Stderr, "soak: --relays must be at least 3 (the schedule kills, stops and freezes three different relays)")
		return 2
	}
	s := &soak{cfg: cfg, start: time.Now()}
	code, err := s.run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 1
	}
	return code
}

func (s *soak) run() (int, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := s.cfg
	if cfg.work == "" {
		dir, err := os.MkdirTemp("", "outboxtop-soak-")
		if err != nil {
			return 1, err
		}
		cfg.work = dir
	} else if err := os.MkdirAll(cfg.work, 0o755); err != nil {
		return 1, err
	}
	s.cfg = cfg
	s.logf("work directory %s", cfg.work)

	s.bin = cfg.binary
	if s.bin == "" {
		s.bin = filepath.Join(cfg.work, "outboxtop")
		s.logf("building outboxtop")
		build := exec.Command("go", "build", "-o", s.bin, "github.com/outboxtop/outboxtop")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return 1, fmt.Errorf("building outboxtop: %w", err)
		}
	}
	_, port, err := net.SplitHostPort(strings.Split(cfg.brokers, ",")[0])
	if err != nil {
		return 1, fmt.Errorf("--brokers: %w", err)
	}
	s.env = append(os.Environ(), "KAFKA_PORT="+port)

	cluster, err := pgtemp.Start(ctx, pgtemp.Options{})
	if err != nil {
		return 1, err
	}
	s.cluster = cluster
	defer func() {
		if b, err := os.ReadFile(filepath.Join(cluster.Dir(), "server.log")); err == nil {
			_ = os.WriteFile(filepath.Join(cfg.work, "postgres.log"), b, 0o644)
		}
		cluster.Close()
	}()
	s.dsn = cluster.DSN("postgres")
	if out, err := exec.Command(s.bin, "migrate", "--dsn", s.dsn).CombinedOutput(); err != nil {
		return 1, fmt.Errorf("outboxtop migrate: %v: %s", err, out)
	}
	s.pool, err = pgxpool.New(ctx, s.dsn)
	if err != nil {
		return 1, err
	}
	defer s.pool.Close()
	if err := demo.Migrate(ctx, s.pool, ""); err != nil {
		return 1, err
	}

	prefix := fmt.Sprintf("soak%d.", time.Now().Unix())
	topics := []string{prefix + "outbox." + demo.AggregateOrder, prefix + "outbox." + demo.AggregatePayment}
	if err := createTopics(ctx, cfg.brokers, topics); err != nil {
		return 1, err
	}
	s.report = runReport{Duration: cfg.duration.String(), Relays: cfg.relays, Rate: cfg.rate, Lease: cfg.lease.String(),
		Brokers: cfg.brokers, Topics: topics}

	relayArgs := []string{"--headless", "--dsn", s.dsn, "--brokers", cfg.brokers,
		"--topic-template", prefix + "outbox.{aggregate_type}", "--log-format", "json",
		"--lease", cfg.lease.String(), "--batch-size", fmt.Sprint(cfg.batch), "--in-flight", "4",
		"--publish-timeout", "3s", "--backoff-max", "10s", "--shutdown-timeout", "10s"}
	for i := range cfg.relays {
		r := &relay{name: fmt.Sprintf("relay-%d", i+1), args: relayArgs, bin: s.bin, dir: cfg.work, logf: s.logf}
		if err := r.start(); err != nil {
			return 1, err
		}
		s.relays = append(s.relays, r)
	}
	defer func() {
		for _, r := range s.relays {
			r.mu.Lock()
			r.stopping = true
			r.mu.Unlock()
			_ = r.signal(syscall.SIGKILL)
		}
	}()

	// The order service gets its own pool: its failed transactions during the
	// PostgreSQL restart must not starve the harness's queries.
	loadPool, err := pgxpool.New(ctx, s.dsn)
	if err != nil {
		return 1, err
	}
	defer loadPool.Close()
	var counters demo.Counters
	s.orders, err = demo.NewOrders(loadPool, &counters, demo.OrderConfig{Rate: cfg.rate, Workers: 4,
		Outbox: outbox.Writer{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return 1, err
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	loadDone := make(chan error, 1)
	go func() { loadDone <- s.orders.Run(loadCtx) }()

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watchDone := make(chan struct{})
	go func() { s.watch(watchCtx, &counters); close(watchDone) }()

	s.logf("load %.0f events/s, %d relays, lease %v, topics %s*, for %v", cfg.rate, cfg.relays, cfg.lease, prefix, cfg.duration)
	loadStart := time.Now()
	s.runSchedule(ctx, loadStart)
	if rest := cfg.duration - time.Since(loadStart); rest > 0 {
		select {
		case <-time.After(rest):
		case <-ctx.Done():
		}
	}
	stopLoad()
	if err := <-loadDone; err != nil {
		return 1, fmt.Errorf("order service: %w", err)
	}
	s.report.WriteErrors = counters.Snapshot().WriteErrors
	s.logf("load stopped: %d events committed by the order service", counters.Snapshot().Committed)

	drainStart := time.Now()
	if err := s.waitDrained(ctx, cfg.drainLimit); err != nil {
		s.problem("%v", err)
	}
	s.report.Drain = time.Since(drainStart).Seconds()
	s.logf("drained in %.1fs", s.report.Drain)
	s.wg.Wait() // recovery measurements end once everything is published
	stopWatch()
	<-watchDone

	for _, r := range s.relays {
		if err := r.stop(20 * time.Second); err != nil {
			s.report.RelayProblems = append(s.report.RelayProblems, err.Error())
		}
		r.mu.Lock()
		s.report.RelayRestarts = append(s.report.RelayRestarts, r.unexpected...)
		r.mu.Unlock()
	}
	if ctx.Err() != nil {
		return 1, errors.New("interrupted")
	}

	reportPath := filepath.Join(cfg.work, "run.json")
	b, _ := json.MarshalIndent(s.report, "", "  ")
	if err := os.WriteFile(reportPath, b, 0o644); err != nil {
		return 1, err
	}
	self, err := os.Executable()
	if err != nil {
		return 1, err
	}
	s.logf("checking: a separate process reads every record of %s and compares with the database", strings.Join(topics, ", "))
	check := exec.Command(self, "check", "--dsn", s.dsn, "--brokers", cfg.brokers, "--topics", strings.Join(topics, ","), "--report", reportPath)
	check.Stdout, check.Stderr = os.Stdout, os.Stderr
	if err := check.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			s.logf("FAILED; logs in %s", cfg.work)
			return ee.ExitCode(), nil
		}
		return 1, err
	}
	s.logf("logs in %s", cfg.work)
	return 0, nil
}

func (s *soak) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.logf("problem: %s", msg)
	s.mu.Lock()
	s.report.Problems = append(s.report.Problems, msg)
	s.mu.Unlock()
}

func createTopics(ctx context.Context, brokers string, topics []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, 3, 1, nil, topics...)
	if err != nil {
		return fmt.Errorf("creating topics on %s (is the broker running? scripts/kafka start): %w", brokers, err)
	}
	for _, r := range resp {
		if r.Err != nil {
			return fmt.Errorf("creating topic %s: %w", r.Topic, r.Err)
		}
	}
	return nil
}
