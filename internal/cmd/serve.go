package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/outboxtop/outboxtop/internal/app"
	"github.com/outboxtop/outboxtop/internal/console"
	"github.com/outboxtop/outboxtop/internal/sshserve"
)

// serveFlags are outboxtop serve's flags: the SSH server's, and the console's.
type serveFlags struct {
	addr           string
	hostKey        string
	authorizedKeys string
	operators      string
	idleTimeout    time.Duration
	maxPerKey      int
	maxUnauth      int
	noRelay        bool
	readOnly       bool
	db             dbFlags
	relay          relayFlags
	retain         retentionFlags
	metrics        string
	log            logFlags
	lag            lagFlags
}

func (f *serveFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.addr, "ssh-addr", "127.0.0.1:2222", "listen address (loopback only by default: :2222 accepts other hosts)")
	fs.StringVar(&f.hostKey, "host-key", "", "the server's private host key (generated, mode 0600, when the file does not exist) (required)")
	fs.StringVar(&f.authorizedKeys, "authorized-keys", "", "OpenSSH authorized_keys file of the keys that may log in, read-only (required)")
	fs.StringVar(&f.operators, "operators", "", "authorized_keys file of the keys that may also act")
	fs.DurationVar(&f.idleTimeout, "idle-timeout", 15*time.Minute, "close a console after this long without a key press (0: never)")
	fs.IntVar(&f.maxPerKey, "max-sessions-per-key", 4, "sessions one key may hold open at once (0: no limit)")
	fs.IntVar(&f.maxUnauth, "max-unauthenticated", 100, "connections still logging in at once, a tenth of them from one address (0: no limit)")
	fs.BoolVar(&f.noRelay, "no-relay", false, "do not embed a relay: the consoles only watch")
	fs.BoolVar(&f.readOnly, "read-only", false, "every session is read-only, operators included")
	f.log.register(fs)
	f.db.wholeFleet = "serve the fleet console of this fleet file (no relay; [[operator]] tables limit operator keys)"
	f.db.register(fs)
	keepOwn(fs, "fleet")
	f.relay.register(fs)
	f.retain.register(fs)
	fs.StringVar(&f.metrics, "metrics-addr", "", "serve /metrics, /healthz and /readyz on this address (e.g. :9464); off when empty")
	f.lag.register(fs)
	f.lag.registerInterval(fs)
}

// maxUnauthPerSource is how many of the --max-unauthenticated connections one
// source (an address, an IPv6 /64) may hold: a tenth, rounded up, so that one
// source cannot fill the bound and crowd out a login from elsewhere; 0 (no
// limit) when the whole is not limited.
func (f *serveFlags) maxUnauthPerSource() int { return (f.maxUnauth + 9) / 10 }

// runServe is outboxtop serve: the console over SSH, one per session, sharing
// one application (internal/app): one database pool, at most one embedded relay
// with its housekeeping, one /metrics.
func runServe(ctx context.Context, args []string, io IO) error {
	fs := newFlagSet("serve", io)
	var f serveFlags
	f.register(fs)
	if err := parse(fs, args, io); err != nil {
		return err
	}
	switch {
	case f.hostKey == "":
		return usagef("--host-key is required (the file is generated when it does not exist)")
	case f.authorizedKeys == "":
		return usagef("--authorized-keys is required")
	case f.idleTimeout < 0:
		return usagef("--idle-timeout must not be negative")
	case f.maxPerKey < 0:
		return usagef("--max-sessions-per-key must not be negative")
	case f.maxUnauth < 0:
		return usagef("--max-unauthenticated must not be negative")
	}
	if f.db.fleetView() {
		return serveFleet(ctx, fs, &f, io)
	}
	if err := f.retain.check(); err != nil {
		return err
	}
	if f.noRelay {
		if err := refuseRelayFlagsWithoutRelay(fs, io); err != nil {
			return err
		}
	}
	logger, err := f.log.logger(io.Err)
	if err != nil {
		return err
	}
	cfg := app.Config{Conns: 10, ReadOnly: f.readOnly, Housekeeping: f.retain.config(), MetricsAddr: f.metrics, Logger: logger}
	if !f.noRelay {
		if err := f.relay.resolve(f.db.schema, io); err != nil {
			return err
		}
		rcfg := f.relay.cfg
		rcfg.Logger = logger
		cfg.Relay, cfg.Kafka = &rcfg, f.relay.kafka
	}
	a, err := openApp(ctx, &f.db, io, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	opts := console.Options{Inspector: a.Inspector, ReadOnly: f.readOnly, MissingTopics: missingTopicsOf(a.Pool, f.db.schema)}
	if a.Relay != nil {
		opts.Relay = a.Relay
	}
	// One lag cache for every session: the brokers are asked once per --lag-interval.
	if f.noRelay {
		if err := f.relay.resolveKafka(io); err != nil {
			return err
		}
	}
	if len(f.relay.kafka.Brokers) > 0 { // the detail reads records back
		opts.Kafka = kafkaClientFor(f.relay.kafka)
	}
	closeLag, err := f.lag.consoleLag(&opts, f.relay.kafka, a.Pool, f.db.schema)
	if err != nil {
		return err
	}
	defer closeLag()
	srv, err := sshserve.New(sshserve.Config{
		HostKeyPath:                 f.hostKey,
		AuthorizedKeysPath:          f.authorizedKeys,
		OperatorsPath:               f.operators,
		IdleTimeout:                 f.idleTimeout,
		MaxSessionsPerKey:           f.maxPerKey,
		Console:                     opts,
		ReadOnlyInspector:           a.ReadOnlyInspector,
		Status:                      statusWriter(a.Inspector, a.Pool),
		Logger:                      logger,
		MaxUnauthenticated:          f.maxUnauth,
		MaxUnauthenticatedPerSource: f.maxUnauthPerSource(),
	})
	if err != nil {
		return usagef("%v", err)
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("--ssh-addr: %w", err)
	}
	logger.Info("serving the console over SSH", "addr", ln.Addr().String(), "host_key", srv.HostKeyFingerprint(),
		"relay", !f.noRelay, "read_only", f.readOnly, "idle_timeout", f.idleTimeout,
		"max_sessions_per_key", f.maxPerKey, "max_unauthenticated", f.maxUnauth, "max_unauthenticated_per_source", f.maxUnauthPerSource())
	err = a.Run(ctx, func(ctx context.Context) error {
		defer reloadKeysOnSIGHUP(srv, logger)()
		return srv.Serve(ctx, ln)
	})
	logger.Info("SSH server stopped")
	return err
}

// reloadKeysOnSIGHUP re-reads srv's key files on every SIGHUP (they are also
// polled for changes: removed keys lose their sessions) until the returned stop
// is called. SIGHUP is caught from this call on, so it never ends the process.
func reloadKeysOnSIGHUP(srv *sshserve.Server, logger *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-hup:
				logger.Info("SIGHUP: reloading the key files")
				srv.ReloadKeys()
			}
		}
	})
	return func() {
		signal.Stop(hup)
		close(done)
		wg.Wait()
	}
}
