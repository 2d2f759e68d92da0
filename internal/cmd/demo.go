package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/pflag"

	"github.com/outboxtop/outboxtop/internal/app"
	"github.com/outboxtop/outboxtop/internal/demo"
	"github.com/outboxtop/outboxtop/internal/pgtemp"
	"github.com/outboxtop/outboxtop/wire"
)

// demoFlags are `outboxtop demo`'s flags. The database and the brokers come
// from --dsn and --brokers (or their OUTBOXTOP_ variables) only: a
// DATABASE_URL or KAFKA_BROKERS meant for something else must not receive
// the demo's tables and records.
type demoFlags struct {
	dsn           string
	schema        string
	relay         relayFlags
	rate          float64
	noTUI         bool
	duration      time.Duration
	faults        bool
	settleTimeout time.Duration
	log           logFlags
}

// The demo's relay timings: short, so an abandoned batch comes back within
// seconds and an outage ends visibly soon after it is lifted.
var demoRelayDefaults = map[string]string{
	"lease":           "5s",
	"publish-timeout": "2s",
	"backoff-base":    "200ms",
	"backoff-max":     "5s",
}

func (f *demoFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.dsn, "dsn", "", "use this PostgreSQL database instead of a throwaway cluster (DATABASE_URL and PG* are ignored)")
	fs.StringVar(&f.schema, "schema", wire.DefaultSchema, "schema holding outboxtop's tables (the demo's own are in "+demo.DefaultSchema+")")
	fs.Float64Var(&f.rate, "rate", 50, "events per second the simulated order service commits")
	fs.BoolVar(&f.noTUI, "no-tui", false, "run without the console for --duration, print a summary, exit 0 only if everything settled")
	fs.DurationVar(&f.duration, "duration", 30*time.Second, "with --no-tui: how long the order service runs")
	fs.BoolVar(&f.faults, "faults", false, "with --no-tui: kill a relay batch at 1/5 of --duration and cut the relay off Kafka from 2/5 to 3/5")
	fs.DurationVar(&f.settleTimeout, "settle-timeout", 60*time.Second, "with --no-tui: how long to wait, after --duration, for everything to be published and applied")
	f.log.register(fs)
	f.relay.register(fs)
	for name, v := range demoRelayDefaults {
		fl := fs.Lookup(name)
		_ = fl.Value.Set(v) // a default, not a user's choice: Changed stays false
		fl.DefValue = v
	}
	fs.Lookup("brokers").Usage = "use this Kafka cluster (comma-separated host:port) instead of the in-process broker (KAFKA_BROKERS is ignored)"
}

func runDemo(ctx context.Context, args []string, io IO) error {
	fs := newFlagSet("demo", io)
	var f demoFlags
	f.register(fs)
	if err := parse(fs, args, io); err != nil {
		return err
	}
	dcfg, err := f.config(fs, io)
	if err != nil {
		return err
	}
	logger := slog.New(slog.DiscardHandler) // the console owns the terminal
	if f.noTUI {
		if logger, err = f.log.logger(io.Err); err != nil {
			return err
		}
	}
	dcfg.Logger = logger
	// The demo's relay opens through the same lifecycle as every other mode's,
	// on the database and brokers the demo starts; its settings are checked
	// before anything starts.
	rcfg := f.relay.cfg
	rcfg.Logger = logger
	acfg := app.Config{Schema: f.schema, Conns: demo.Conns + 4, Relay: &rcfg, Logger: logger}
	if err := acfg.Validate(); err != nil {
		return usageOf(err)
	}
	if !f.noTUI {
		fmt.Fprintln(io.Err, "outboxtop demo: starting PostgreSQL and Kafka…")
	}
	d, err := demo.Start(ctx, dcfg)
	if err != nil {
		if errors.Is(err, pgtemp.ErrNoBinaries) {
			return exitError{code: ExitFailure, msg: "demo: " + err.Error()}
		}
		if ctx.Err() != nil {
			return nil // interrupted while starting; Start has cleaned up
		}
		return fmt.Errorf("demo: %w", err)
	}
	defer d.Close()

	acfg.Connect, acfg.Kafka = d.Connect, d.RelayKafka(f.relay.kafka)
	a, err := app.Open(ctx, acfg)
	if err != nil {
		return usageOf(err)
	}
	defer a.Close()
	if err := d.Attach(a.Pool, a.Relay); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if f.noTUI {
		return a.Run(ctx, func(ctx context.Context) error { return runDemoHeadless(ctx, d, &f, io) })
	}
	// The console reaches the demo's brokers directly, not through the relay's
	// outage switch: lag and read-backs keep working during an outage.
	kc := f.relay.kafka
	kc.Brokers = d.Brokers()
	front := consoleFront{schema: f.schema, kafka: kc, lag: new(lagFlags), extras: demoExtras(d)}
	return a.Run(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		runErr := make(chan error, 1)
		go func() {
			err := d.Run(ctx)
			if err != nil {
				cancel() // the console would show a demo that no longer runs
			}
			runErr <- err
		}()
		err := front.run(a, io)(ctx)
		cancel()
		fmt.Fprintln(io.Err, "outboxtop demo: stopping; removing the throwaway database")
		if rerr := <-runErr; rerr != nil && !errors.Is(rerr, context.Canceled) {
			return fmt.Errorf("demo: %w", rerr)
		}
		return err
	})
}

// config checks the flags and turns them into the demo's configuration.
func (f *demoFlags) config(fs *pflag.FlagSet, io IO) (demo.Config, error) {
	var cfg demo.Config
	if !f.noTUI {
		for _, name := range []string{"duration", "faults", "settle-timeout"} {
			if fs.Changed(name) {
				return cfg, usagef("--%s goes with --no-tui", name)
			}
		}
	}
	if f.noTUI && f.duration <= 0 {
		return cfg, usagef("--duration must be positive")
	}
	if f.rate < 0 {
		return cfg, usagef("--rate must be ≥ 0 events per second, not %v", f.rate)
	}
	if err := wire.ValidateSchema(f.schema); err != nil {
		return cfg, usagef("--schema: %v", err)
	}
	if f.dsn != "" {
		if _, err := pgx.ParseConfig(f.dsn); err != nil {
			return cfg, usagef("invalid database connection string: %s", redactParseError(err))
		}
	}
	ownBrokers := strings.TrimSpace(f.relay.brokers) != ""
	if !ownBrokers {
		f.relay.brokers = "in-process:0" // replaced by the in-process broker's address
	}
	if err := f.relay.resolve(f.schema, io); err != nil {
		return cfg, err
	}
	if f.relay.kafka.TLS || f.relay.kafka.SASLMechanism != "" {
		return cfg, usagef("the demo's consumer does not speak TLS or SASL yet: give --brokers a plaintext listener")
	}
	cfg = demo.Config{DSN: f.dsn, Outbox: f.schema, TopicTemplate: f.relay.cfg.WithDefaults().EffectiveTopicTemplate(), Rate: f.rate}
	// Quitting should be quick: in-flight batches get a short grace, then their
	// leases are released.
	if !fs.Changed("shutdown-timeout") {
		f.relay.cfg.ShutdownTimeout = consoleShutdown
	}
	if ownBrokers {
		cfg.Brokers = f.relay.kafka.Brokers
	}
	return cfg, nil
}

func runDemoHeadless(ctx context.Context, d *demo.Demo, f *demoFlags, io IO) error {
	where := "your database"
	if dir := d.ClusterDir(); dir != "" {
		where = "a throwaway PostgreSQL in " + dir
	}
	kafka := "Kafka at " + strings.Join(d.Brokers(), ",")
	if d.InProcessKafka() {
		kafka = "Kafka in process at " + strings.Join(d.Brokers(), ",")
	}
	fmt.Fprintf(io.Out, "outboxtop demo: %s; %s; orders at %v events/s for %v\n", where, kafka, f.rate, f.duration)
	s, err := d.RunHeadless(ctx, demo.HeadlessConfig{
		Duration: f.duration, Faults: f.faults, SettleTimeout: f.settleTimeout, Progress: io.Out,
	})
	s.Print(io.Out)
	switch {
	case errors.Is(err, demo.ErrInterrupted):
		return exitError{code: ExitFailure, msg: "demo: " + err.Error()}
	case err != nil:
		return fmt.Errorf("demo: %w", err)
	case !s.Settled():
		return exitError{code: ExitFailure}
	}
	return nil
}
