package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/outboxtop/outboxtop/migrations"
	"github.com/outboxtop/outboxtop/relay"
)

// runHeadless is the production relay: logs, metrics, health, signals.
func runHeadless(ctx context.Context, c *consoleFlags, io IO) error {
	logger, err := c.log.logger(io.Err)
	if err != nil {
		return err
	}
	if err := c.relay.resolve(c.db.schema, io); err != nil {
		return err
	}
	pool, err := c.db.pool(ctx, io, int32(c.relay.cfg.InFlight+4))
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := checkSchema(ctx, pool, c.db.schema); err != nil {
		return err
	}
	client, err := relay.NewKafkaClient(c.relay.kafka)
	if err != nil {
		return usagef("%v", err)
	}
	defer client.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		relay.NewBacklogCollector(pool, c.db.schema))
	cfg := c.relay.cfg
	cfg.Drain = c.drain
	cfg.Logger = logger
	cfg.Metrics = relay.NewMetrics(reg)
	r, err := relay.New(pool, client, cfg)
	if err != nil {
		return usagef("%v", err)
	}
	if c.metrics != "" {
		srv, err := serveMetrics(c.metrics, reg, pool, r)
		if err != nil {
			return err
		}
		defer srv.Shutdown(context.WithoutCancel(ctx))
		logger.Info("serving metrics", "addr", c.metrics)
	}
	logger.Info("relay starting", "schema", c.db.schema, "brokers", c.relay.kafka.Brokers,
		"ordering", cfg.Ordering, "batch_size", cfg.BatchSize, "in_flight", cfg.InFlight, "drain", cfg.Drain)
	housekeeping := make(chan struct{})
	hctx, stopHousekeeping := context.WithCancel(ctx)
	go func() { defer close(housekeeping); c.retain.run(hctx, pool, c.db.schema, logger) }()
	err = r.Run(ctx)
	stopHousekeeping()
	<-housekeeping
	if err != nil {
		return err
	}
	s := r.Status()
	logger.Info("relay stopped", "published", s.Published, "failed", s.Failed, "retried", s.Retried, "lost_fences", s.LostFences)
	return nil
}

// checkSchema refuses to relay into a schema that migrate has not brought up to
// this binary's version: the relay's SQL depends on it.
func checkSchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	v, err := migrations.Version(ctx, conn.Conn(), schema)
	if err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	if int(v) < migrations.Count() {
		return exitError{ExitFailure, fmt.Sprintf("schema %q is at version %d, this outboxtop needs %d: run 'outboxtop migrate' first", schema, v, migrations.Count())}
	}
	return nil
}

func serveMetrics(addr string, reg *prometheus.Registry, pool *pgxpool.Pool, r *relay.Relay) (*http.Server, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		defer cancel()
		var problems []string
		if err := pool.Ping(ctx); err != nil {
			problems = append(problems, "database unreachable")
		}
		if !r.Status().BrokerReachable {
			problems = append(problems, "kafka unreachable")
		}
		if len(problems) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			for _, p := range problems {
				fmt.Fprintln(w, p)
			}
			return
		}
		fmt.Fprintln(w, "ready")
	})
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usagef("--metrics-addr %s: %v", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener is ours; Serve only fails when it is closed
		}
	}()
	return srv, nil
}
