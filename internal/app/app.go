// Package app is outboxtop's application lifecycle, the same for every mode
// that runs a relay or a console: the console, the relay alone, watch, the SSH
// server and the demo. Validate checks the configuration, once, before anything
// is opened; Open connects the database pool, checks the schema's version,
// builds the inspectors, the Kafka client and the embedded relay, registers the
// metrics and starts the metrics server; Run runs the relay and the
// housekeeping beside a front (the console, the SSH server, the demo's
// workload, or nothing: the relay alone) and stops them in order; Close
// releases what Open took.
//
// One lifecycle means one set of rules for every mode: a setting either takes
// effect wherever it is accepted, or the mode refuses it. Where the database and
// the brokers come from is the caller's (Config.Connect, Config.Kafka): the demo
// passes the throwaway ones it started.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxtop/outboxtop/internal/housekeeping"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/relay"
)

// Config says what the application runs.
type Config struct {
	// Schema holds outboxtop's tables.
	Schema string
	// Connect opens the pool with at most maxConns connections (the caller's
	// connection settings and their precedence live with the caller).
	Connect func(ctx context.Context, maxConns int32) (*pgxpool.Pool, error)
	// Conns is the connections the front needs (consoles, checks), besides the
	// relay's (one per batch in flight) and the housekeeping's.
	Conns int32
	// ReadOnly makes Inspector refuse every action.
	ReadOnly bool
	// Relay, when set, is the embedded relay's configuration (its Schema and
	// Metrics are filled in); nil runs no relay.
	Relay *relay.Config
	// Kafka is the relay's client configuration (unused without Relay).
	Kafka relay.KafkaConfig
	// Housekeeping is the archive policy; the zero value runs none. It is the
	// relay's duty: refused without Relay.
	Housekeeping housekeeping.Config
	// MetricsAddr, when not empty, serves /metrics, /healthz and /readyz there
	// (":0" picks a free port; MetricsAddr() says which).
	MetricsAddr string
	// Logger receives the application's log lines (default: discarded). The
	// relay logs to Relay.Logger, else here.
	Logger *slog.Logger
}

// Validate checks the settings and the ones they need together, before
// anything is opened: the one check every mode's configuration goes through
// (Open calls it; a caller with something costly to start first calls it
// before that). Its errors are ConfigErrors.
func (cfg Config) Validate() error {
	if err := cfg.Housekeeping.Validate(); err != nil {
		return ConfigError{err}
	}
	if cfg.Housekeeping.Enabled() && cfg.Relay == nil {
		return configErrorf("--archive-after and --archive-retention are the relay's housekeeping: they need the embedded relay (drop --no-relay)")
	}
	if cfg.Relay != nil {
		rcfg := *cfg.Relay
		rcfg.Schema = cfg.Schema
		if err := rcfg.Validate(); err != nil {
			return ConfigError{err}
		}
	}
	return nil
}

// ConfigError is a setting the application cannot run with: bad usage, not a
// failure at run time.
type ConfigError struct{ Err error }

func (e ConfigError) Error() string { return e.Err.Error() }
func (e ConfigError) Unwrap() error { return e.Err }

func configErrorf(format string, args ...any) error {
	return ConfigError{fmt.Errorf(format, args...)}
}

// App is an opened application.
type App struct {
	// Pool is the database pool everything shares.
	Pool *pgxpool.Pool
	// Inspector serves the front; read-only when Config.ReadOnly.
	Inspector *inspect.Inspector
	// ReadOnlyInspector refuses every action, whatever Config.ReadOnly says.
	ReadOnlyInspector *inspect.Inspector
	// Relay is the embedded relay, nil without one.
	Relay *relay.Relay
	// Registry holds the metrics /metrics serves.
	Registry *prometheus.Registry

	cfg     Config
	log     *slog.Logger
	kafka   *kgo.Client
	house   *housekeeping.Service
	metrics *http.Server
	addr    net.Addr
}

// Open builds the application. On error, everything it took is released.
func Open(ctx context.Context, cfg Config) (_ *App, err error) {
	if cfg.Connect == nil {
		return nil, errors.New("app: Config.Connect is required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	a := &App{cfg: cfg, log: cfg.Logger, Registry: prometheus.NewRegistry()}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()

	var rcfg relay.Config
	conns := cfg.Conns
	if cfg.Relay != nil {
		rcfg = *cfg.Relay
		rcfg.Schema = cfg.Schema
		if rcfg.Logger == nil {
			rcfg.Logger = cfg.Logger
		}
		conns += int32(rcfg.InFlight) + 1 // the rescue's pass, beside the claims (relay/rescue.go)
		if rcfg.HeartbeatInterval >= 0 {
			conns++ // the heartbeat's one short statement every few seconds never waits for a batch's connection
		}
	}
	if cfg.Housekeeping.Enabled() {
		conns++
	}
	if a.Pool, err = cfg.Connect(ctx, conns); err != nil {
		return nil, err
	}
	if err := CheckSchema(ctx, a.Pool, cfg.Schema); err != nil {
		return nil, err
	}
	var opts []inspect.Option
	if cfg.ReadOnly {
		opts = append(opts, inspect.ReadOnly())
	}
	if a.Inspector, err = inspect.New(a.Pool, cfg.Schema, opts...); err != nil {
		return nil, configErrorf("--schema: %v", err)
	}
	if a.ReadOnlyInspector, err = inspect.New(a.Pool, cfg.Schema, inspect.ReadOnly()); err != nil {
		return nil, configErrorf("--schema: %v", err)
	}

	a.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newBacklogCollector(a.ReadOnlyInspector), relay.NewHealthCollector(a.Pool, cfg.Schema),
		newRelaysCollector(a.ReadOnlyInspector), newHorizonCollector(a.ReadOnlyInspector))
	if cfg.Relay != nil {
		kcfg := rcfg.Kafka(cfg.Kafka) // the producer's limits follow the relay's
		kcfg.Extra = append(kcfg.Extra[:len(kcfg.Extra):len(kcfg.Extra)], relay.KafkaMetrics(a.Registry))
		if a.kafka, err = relay.NewKafkaClient(kcfg); err != nil {
			return nil, ConfigError{err}
		}
		rcfg.Metrics = relay.NewMetrics(a.Registry)
		if a.Relay, err = relay.New(a.Pool, a.kafka, rcfg); err != nil {
			return nil, ConfigError{err}
		}
	}
	if cfg.Housekeeping.Enabled() {
		// Housekeeping is not an operator's action: it writes even under a
		// read-only console, as the relay beside it does.
		writer, err := inspect.New(a.Pool, cfg.Schema)
		if err != nil {
			return nil, configErrorf("--schema: %v", err)
		}
		if a.house, err = housekeeping.New(writer, cfg.Housekeeping, cfg.Logger, a.Registry); err != nil {
			return nil, ConfigError{err}
		}
	}
	if cfg.MetricsAddr != "" {
		if err := a.serveMetrics(cfg.MetricsAddr); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// MetricsAddr is the address /metrics is served on, nil when it is not.
func (a *App) MetricsAddr() net.Addr { return a.addr }

// Run runs the relay and the housekeeping until front returns (nil front: until
// the relay stops, which --drain makes it do) or ctx ends. A relay that fails
// ends the front's context: a console would otherwise show a relay that no
// longer runs. Run returns once the relay has released its batches and the
// housekeeping has stopped; the relay's error wins over the front's.
func (a *App) Run(ctx context.Context, front func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var relayErr error
	relayDone := make(chan struct{})
	if a.Relay != nil {
		go func() {
			defer close(relayDone)
			relayErr = a.Relay.Run(ctx)
			if relayErr != nil || front == nil {
				cancel()
			}
		}()
	} else {
		close(relayDone)
	}
	if a.house != nil {
		wg.Add(1)
		go func() { defer wg.Done(); a.house.Run(ctx) }()
	}
	var frontErr error
	if front != nil {
		frontErr = front(ctx)
	} else if a.Relay != nil {
		<-relayDone
	} else {
		<-ctx.Done()
	}
	cancel()
	<-relayDone
	wg.Wait()
	if relayErr != nil && !errors.Is(relayErr, context.Canceled) {
		return relayErr
	}
	return frontErr
}

// Close stops the metrics server and releases the Kafka client and the pool.
func (a *App) Close() {
	if a.metrics != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = a.metrics.Shutdown(ctx)
		cancel()
	}
	if a.kafka != nil {
		a.kafka.Close()
	}
	if a.Pool != nil {
		a.Pool.Close()
	}
}

// CheckSchema refuses to run on a schema that migrate has not brought up to
// this binary's version, or that a newer outboxtop migrated.
func CheckSchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	return migrations.CheckVersion(ctx, conn.Conn(), schema, true)
}
