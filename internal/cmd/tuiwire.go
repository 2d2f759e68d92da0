package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/outboxtop/outboxtop/internal/app"
	"github.com/outboxtop/outboxtop/internal/console"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/relay"
)

// runTUI opens the console: the application lifecycle (database, schema check,
// the embedded relay unless --no-relay, its housekeeping, /metrics when asked)
// and the Bubble Tea program in front of it. The log goes nowhere while the
// console owns the terminal; the relay's last error shows in the Overview.
func runTUI(ctx context.Context, c *consoleFlags, io IO) error {
	cfg, err := c.appConfig(io)
	if err != nil {
		return err
	}
	a, err := openApp(ctx, &c.db, io, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx, consoleFront{
		readOnly: c.readOnly, actor: c.actor, schema: c.db.schema, kafka: c.relay.kafka, lag: &c.lag,
	}.run(a, io))
}

// consoleFront is the console in front of an opened application, the demo's
// included: its relay's pause audited, the topics waiting to exist, a record's
// read-back and the consumers' lag where Kafka is known.
type consoleFront struct {
	readOnly bool
	actor    string // empty: the OS user (and SSH client)
	schema   string
	kafka    relay.KafkaConfig
	lag      *lagFlags
	extras   []console.Extra
}

func (f consoleFront) run(a *app.App, io IO) func(context.Context) error {
	actor := f.actor
	if actor == "" {
		actor = inspect.DefaultActor(io.Getenv)
	}
	return func(ctx context.Context) error {
		topts := console.Options{Inspector: a.Inspector, ReadOnly: f.readOnly, Actor: actor, Context: ctx,
			MissingTopics: missingTopicsOf(a.Pool, f.schema), Extras: f.extras}
		if a.Relay != nil {
			// Pause and resume are audited like the actions (a read-only console
			// cannot pause at all).
			topts.Relay = console.AuditedRelay{Relay: a.Relay, Inspector: a.Inspector, Actor: actor,
				Context: ctx, Logger: slog.New(slog.DiscardHandler)}
		}
		if len(f.kafka.Brokers) > 0 { // the detail reads records back
			topts.Kafka = kafkaClientFor(f.kafka)
		}
		closeLag, err := f.lag.consoleLag(&topts, f.kafka, a.Pool, f.schema)
		if err != nil {
			return err
		}
		defer closeLag()
		err = console.Run(topts)
		if a.Relay != nil && a.Relay.Status().InFlight > 0 {
			fmt.Fprintln(io.Err, "outboxtop: stopping the relay: waiting for in-flight batches")
		}
		return err
	}
}

// appConfig is the console's application: every flag the console accepts is
// here (the log flags are checked; the log itself has nowhere to go while the
// console owns the terminal).
func (c *consoleFlags) appConfig(io IO) (app.Config, error) {
	if _, err := c.log.logger(io.Err); err != nil {
		return app.Config{}, err
	}
	cfg := app.Config{Conns: 6, ReadOnly: c.readOnly, Housekeeping: c.retain.config(), MetricsAddr: c.metrics}
	if c.noRelay {
		if cfg.Housekeeping.Enabled() {
			return app.Config{}, usagef("--archive-after and --archive-retention are the relay's housekeeping: --no-relay runs none")
		}
		if err := c.relay.resolveKafka(io); err != nil { // for the Consumers view's lag alone
			return app.Config{}, err
		}
		return cfg, nil
	}
	if err := c.relay.resolve(c.db.schema, io); err != nil {
		return app.Config{}, err
	}
	rcfg := c.relay.cfg
	// q should quit promptly: in-flight batches get a short grace, then their
	// leases are released (the events are published by the next claim).
	if rcfg.ShutdownTimeout == relay.DefaultConfig.ShutdownTimeout && rcfg.ShutdownTimeout > consoleShutdown {
		rcfg.ShutdownTimeout = consoleShutdown
	}
	cfg.Relay, cfg.Kafka = &rcfg, c.relay.kafka
	return cfg, nil
}

// consoleShutdown replaces the default --shutdown-timeout in the console.
const consoleShutdown = 3 * time.Second

// missingTopicsOf reads, for a console, the Kafka topics that do not exist while
// events wait for them, as the rows' last_error says (bounded:
// relay.WaitingForMissingTopics).
func missingTopicsOf(q relay.Querier, schema string) func(context.Context) ([]console.MissingTopic, error) {
	return func(ctx context.Context) ([]console.MissingTopic, error) {
		waits, err := relay.WaitingForMissingTopics(ctx, q, schema)
		if err != nil {
			return nil, err
		}
		out := make([]console.MissingTopic, 0, len(waits))
		for _, w := range waits {
			out = append(out, console.MissingTopic{Topic: w.Topic, Events: int(w.Events)})
		}
		return out, nil
	}
}
