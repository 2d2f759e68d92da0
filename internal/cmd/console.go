package cmd

import (
	"context"

	"github.com/spf13/pflag"
)

// consoleFlags are outboxtop's flags without a command: the console with the
// relay embedded, or with --headless the relay alone.
type consoleFlags struct {
	db       dbFlags
	relay    relayFlags
	headless bool
	drain    bool
	noRelay  bool
	readOnly bool
	actor    string
	log      logFlags
	metrics  string
	retain   retentionFlags
	lag      lagFlags
}

func (c *consoleFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&c.headless, "headless", false, "run the relay only (production): logs, /metrics, /healthz, /readyz")
	fs.BoolVar(&c.noRelay, "no-relay", false, "console only: watch, do not relay")
	fs.BoolVar(&c.readOnly, "read-only", false, "console: refuse every action")
	fs.StringVar(&c.actor, "actor", "", "name recorded in the audit log for actions (default: OS user and SSH client)")
	c.db.wholeFleet = "console over every outbox of this fleet file, watch only"
	c.registerRelay(fs)
	keepOwn(fs, "fleet")
}

// registerRelay registers what the relay reads: `outboxtop relay`'s flags.
func (c *consoleFlags) registerRelay(fs *pflag.FlagSet) {
	fs.BoolVar(&c.drain, "drain", false, "relay until nothing is publishable, then exit (outboxtop relay, --headless)")
	fs.StringVar(&c.metrics, "metrics-addr", "", "serve /metrics, /healthz and /readyz on this address (e.g. :9464); off when empty")
	c.log.register(fs)
	c.db.register(fs)
	c.relay.register(fs)
	c.retain.register(fs)
	c.lag.register(fs)
	c.lag.registerInterval(fs)
}

// runConsole is outboxtop without a command, and `outboxtop console`: the
// console with the relay embedded; --headless and --no-relay are kept as the
// names of `relay` and `watch` that deployed units and scripts use.
func runConsole(ctx context.Context, args []string, io IO) error {
	return runConsoleAs(ctx, "", args, io)
}

func runConsoleCommand(ctx context.Context, args []string, io IO) error {
	return runConsoleAs(ctx, "console", args, io)
}

func runConsoleAs(ctx context.Context, name string, args []string, io IO) error {
	fs := newFlagSet(name, io)
	var c consoleFlags
	c.register(fs)
	if err := parse(fs, args, io); err != nil {
		return err
	}
	if c.db.fleetView() {
		return runFleetConsole(ctx, fs, &c, io)
	}
	if err := c.retain.check(); err != nil {
		return err
	}
	if c.noRelay {
		if err := refuseRelayFlagsWithoutRelay(fs, io); err != nil {
			return err
		}
	}
	if c.drain && !c.headless {
		return usagef("--drain goes with --headless")
	}
	if c.headless {
		if c.noRelay || c.readOnly || c.actor != "" {
			return usagef("--no-relay, --read-only and --actor are console flags; --headless is the relay")
		}
		return runHeadless(ctx, &c, io)
	}
	return runTUI(ctx, &c, io)
}

// runRelay is `outboxtop relay` (also `outboxtop --headless`): the relay alone,
// for production, with only the flags a relay reads.
func runRelay(ctx context.Context, args []string, io IO) error {
	fs := newFlagSet("relay", io)
	var c consoleFlags
	c.registerRelay(fs)
	keepOwn(fs, "topic-template", "topics", "ordering")
	if err := parse(fs, args, io); err != nil {
		return err
	}
	if err := c.retain.check(); err != nil {
		return err
	}
	c.headless = true
	return runHeadless(ctx, &c, io)
}

// runWatch is `outboxtop watch` (also `outboxtop --no-relay`): the console
// beside relays that run elsewhere; it relays nothing. Its --help lists only
// the flags it reads: the relay's own are hidden, and refused when set.
func runWatch(ctx context.Context, args []string, io IO) error {
	fs := newFlagSet("watch", io)
	var c consoleFlags
	c.register(fs)
	reach := pflag.NewFlagSet("", pflag.ContinueOnError)
	new(relayFlags).registerKafka(reach)
	hide := func(f *pflag.Flag) {
		if reach.Lookup(f.Name) == nil {
			_ = fs.MarkHidden(f.Name)
		}
	}
	relayOnly := pflag.NewFlagSet("", pflag.ContinueOnError)
	new(relayFlags).register(relayOnly)
	new(retentionFlags).register(relayOnly)
	relayOnly.VisitAll(hide)
	for _, name := range []string{"headless", "drain", "no-relay"} {
		_ = fs.MarkHidden(name)
	}
	if err := parse(fs, args, io); err != nil {
		return err
	}
	if c.headless || c.drain {
		return usagef("watch runs no relay: --headless and --drain are the relay's (outboxtop relay)")
	}
	c.noRelay = true
	if c.db.fleetView() {
		return runFleetConsole(ctx, fs, &c, io)
	}
	if err := refuseRelayFlagsWithoutRelay(fs, io); err != nil {
		return err
	}
	if err := c.retain.check(); err != nil {
		return err
	}
	return runTUI(ctx, &c, io)
}
