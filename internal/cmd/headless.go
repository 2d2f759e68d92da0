package cmd

import (
	"context"

	"github.com/outboxtop/outboxtop/internal/app"
)

// runHeadless is the production relay: logs, metrics, health, housekeeping, signals.
func runHeadless(ctx context.Context, c *consoleFlags, io IO) error {
	logger, err := c.log.logger(io.Err)
	if err != nil {
		return err
	}
	if err := c.relay.resolve(c.db.schema, io); err != nil {
		return err
	}
	cfg := c.relay.cfg
	cfg.Drain = c.drain
	cfg.Logger = logger
	a, err := openApp(ctx, &c.db, io, app.Config{
		Conns: 4, Relay: &cfg, Kafka: c.relay.kafka,
		Housekeeping: c.retain.config(), MetricsAddr: c.metrics, Logger: logger,
	})
	if err != nil {
		return err
	}
	defer a.Close()
	closeLag, err := c.lag.registerLagMetrics(a.Registry, c.relay.kafka, a.Pool, c.db.schema)
	if err != nil {
		return err
	}
	defer closeLag()
	logger.Info("relay starting", "schema", c.db.schema, "brokers", c.relay.kafka.Brokers,
		"ordering", cfg.Ordering, "batch_size", cfg.BatchSize, "in_flight", cfg.InFlight, "drain", cfg.Drain)
	// Type=notify: started means the schema checked out and /metrics answers; whether
	// PostgreSQL and Kafka answer right now is /readyz's to say.
	if err := sdNotify(io, "READY=1"); err != nil {
		logger.Warn("telling systemd the relay is ready", "err", err)
	}
	if err := a.Run(ctx, nil); err != nil {
		return err
	}
	s := a.Relay.Status()
	logger.Info("relay stopped", "published", s.Published, "failed", s.Failed, "retried", s.Retried, "lost_fences", s.LostFences)
	return nil
}
