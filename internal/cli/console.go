package cli

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
	fleet    string
}

func (c *consoleFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&c.headless, "headless", false, "run the relay only (production): logs, /metrics, /healthz, /readyz")
	fs.BoolVar(&c.drain, "drain", false, "with --headless: relay until nothing is publishable, then exit")
	fs.BoolVar(&c.noRelay, "no-relay", false, "console only: watch, do not relay")
	fs.BoolVar(&c.readOnly, "read-only", false, "console: refuse every action")
	fs.StringVar(&c.actor, "actor", "", "name recorded in the audit log for actions (default: OS user and SSH client)")
	fs.StringVar(&c.fleet, "fleet", "", "console over every outbox of this fleet file (TOML; see docs/fleet.md); watch only, no relay")
	fs.StringVar(&c.metrics, "metrics-addr", "", "serve /metrics, /healthz and /readyz on this address (e.g. :9464); off when empty")
	c.log.register(fs)
	c.db.register(fs)
	c.relay.register(fs)
	c.retain.register(fs)
	c.lag.register(fs)
	c.lag.registerInterval(fs)
}

// runConsole is outboxtop without a command.
func runConsole(ctx context.Context, args []string, io IO) error {
	fs := newFlagSet("", io)
	var c consoleFlags
	c.register(fs)
	if err := parse(fs, args, io); err != nil {
		return err
	}
	if c.fleet != "" {
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
