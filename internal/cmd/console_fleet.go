package cmd

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/pflag"

	"github.com/outboxtop/outboxtop/internal/console"
	"github.com/outboxtop/outboxtop/internal/consumerlag"
	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/internal/inspect"
)

// fleetConsoleFlags are the console flags that apply with --fleet, besides
// fleetKafkaFlags; any other set on the command line is refused (the fleet console embeds no relay, and
// each outbox's connection comes from the fleet file).
var fleetConsoleFlags = map[string]bool{"fleet": true, "connect-timeout": true, "read-only": true, "actor": true, "no-relay": true}

// runFleetConsole is `outboxtop --fleet FILE`: the fleet table, and each
// outbox's console on enter, read-only when --read-only.
func runFleetConsole(ctx context.Context, fs *pflag.FlagSet, c *consoleFlags, io IO) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err == nil && !fleetConsoleFlags[f.Name] && !slices.Contains(fleetKafkaFlags, f.Name) && io.Getenv(EnvName(f.Name)) == "" {
			err = usagef("--%s does not apply with --fleet: the fleet console runs no relay and takes each outbox's database from the fleet file", f.Name)
		}
	})
	if err != nil {
		return err
	}
	if err := c.relay.resolveKafka(io); err != nil {
		return err
	}
	f, err := fleet.Load(c.db.fleet, io.Getenv)
	if err != nil {
		return usagef("%v", err)
	}
	p, err := fleet.NewPoller(f, fleet.Config{Dial: fleetLagDial(c.relay.kafka)})
	if err != nil {
		return usagef("%v", err)
	}
	defer p.Close()
	actor := c.actor
	if actor == "" {
		actor = inspect.DefaultActor(io.Getenv)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	polled := make(chan struct{})
	go func() { defer close(polled); p.Run(ctx) }()
	defer func() { stop(); <-polled }()
	return console.RunFleet(console.FleetOptions{
		Source:  p,
		Title:   filepath.Base(c.db.fleet),
		Context: ctx,
		Open:    openFleetOutbox(p, fleetLagDial(c.relay.kafka), c.readOnly, actor),
	})
}

// openFleetOutbox opens an outbox's console on a pool of its own (the
// poller's stay small and the poller's), with its Consumers view on the
// outbox's brokers when the fleet file names them.
func openFleetOutbox(p *fleet.Poller, dial func([]string) consumerlag.Dial, readOnly bool, actor string) func(context.Context, string) (console.Options, func(), error) {
	return func(ctx context.Context, name string) (console.Options, func(), error) {
		pool, o, err := p.Open(ctx, name, 4)
		if err != nil {
			return console.Options{}, nil, err
		}
		var opts []inspect.Option
		if readOnly {
			opts = append(opts, inspect.ReadOnly())
		}
		in, err := inspect.New(pool, o.Schema, opts...)
		if err != nil {
			pool.Close()
			return console.Options{}, nil, err
		}
		lag, closeLag, err := fleetOutboxLag(dial, o, pool)
		if err != nil {
			pool.Close()
			return console.Options{}, nil, err
		}
		return console.Options{Inspector: in, ReadOnly: readOnly, Actor: actor, Name: name, Consumers: lag,
				MissingTopics: missingTopicsOf(pool, o.Schema)},
			func() { closeLag(); pool.Close() }, nil
	}
}

// fleetOutboxLag is the Consumers view's lag of an outbox of the fleet (nil
// without brokers): its groups on its brokers, throttled as a single console's.
func fleetOutboxLag(dial func([]string) consumerlag.Dial, o fleet.Outbox, pool *pgxpool.Pool) (console.ConsumerLag, func(), error) {
	if len(o.Brokers) == 0 {
		return nil, func() {}, nil
	}
	c, err := consumerlag.New(dial(o.Brokers), consumerlag.Options{Groups: o.Groups})
	if err != nil {
		return nil, nil, fmt.Errorf("outbox %q: %w", o.Name, err)
	}
	cache := consumerlag.NewCache(c, consumerlag.OutboxTopics(pool, o.Schema, nil), 15*time.Second)
	return cache, func() { cache.Close(); c.Close() }, nil
}
