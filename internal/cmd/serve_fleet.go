package cmd

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/pflag"

	"github.com/outboxtop/outboxtop/internal/console"
	"github.com/outboxtop/outboxtop/internal/consumerlag"
	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/internal/sshserve"
)

// serveFleetFlags are serve's flags that apply with --fleet, besides fleetKafkaFlags.
var serveFleetFlags = map[string]bool{"fleet": true, "connect-timeout": true, "ssh-addr": true, "host-key": true, "authorized-keys": true, "operators": true,
	"idle-timeout": true, "max-sessions-per-key": true, "max-unauthenticated": true, "no-relay": true, "read-only": true, "log-format": true, "log-level": true}

// serveFleet is `outboxtop serve --fleet FILE`: the fleet console over SSH.
// One poller serves every session; each outbox opened from the fleet gets one
// pool, shared by the sessions that open it.
func serveFleet(ctx context.Context, fs *pflag.FlagSet, f *serveFlags, sio IO) error {
	var err error
	fs.Visit(func(fl *pflag.Flag) {
		if err == nil && !serveFleetFlags[fl.Name] && !slices.Contains(fleetKafkaFlags, fl.Name) && sio.Getenv(EnvName(fl.Name)) == "" {
			err = usagef("--%s does not apply with --fleet: serve --fleet runs no relay and takes each outbox's database from the fleet file", fl.Name)
		}
	})
	if err != nil {
		return err
	}
	logger, err := f.log.logger(sio.Err)
	if err != nil {
		return err
	}
	file, err := fleet.Load(f.db.fleet, sio.Getenv)
	if err != nil {
		return usagef("%v", err)
	}
	if err := f.relay.resolveKafka(sio); err != nil {
		return err
	}
	p, err := fleet.NewPoller(file, fleet.Config{Dial: fleetLagDial(f.relay.kafka)})
	if err != nil {
		return usagef("%v", err)
	}
	defer p.Close()
	pools := &fleetPools{poller: p, dial: fleetLagDial(f.relay.kafka), pools: map[string]*pgxpool.Pool{}, lags: map[string]fleetLag{}}
	defer pools.close()
	srv, err := sshserve.New(sshserve.Config{
		HostKeyPath:                 f.hostKey,
		AuthorizedKeysPath:          f.authorizedKeys,
		OperatorsPath:               f.operators,
		IdleTimeout:                 f.idleTimeout,
		MaxSessionsPerKey:           f.maxPerKey,
		Console:                     console.Options{ReadOnly: f.readOnly},
		MaxUnauthenticated:          f.maxUnauth,
		MaxUnauthenticatedPerSource: f.maxUnauthPerSource(),
		Fleet: &sshserve.Fleet{
			Source: p,
			Title:  filepath.Base(f.db.fleet),
			Open:   pools.open,
			MayAct: file.MayAct,
		},
		Status: func(_ context.Context, w io.Writer) error {
			rows := p.Rows()
			writeFleetText(w, sanitizeRows(rows), rows)
			return nil
		},
		Logger: logger,
	})
	if err != nil {
		return usagef("%v", err)
	}
	// A first poll before the first session: nobody sees a fleet of "polling…".
	p.Poll(ctx)
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("--ssh-addr: %w", err)
	}
	logger.Info("serving the fleet console over SSH", "addr", ln.Addr().String(), "host_key", srv.HostKeyFingerprint(),
		"fleet", f.db.fleet, "outboxes", len(file.Outboxes), "read_only", f.readOnly)
	ctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { p.Run(ctx) })
	defer wg.Wait()
	defer stop()
	defer reloadKeysOnSIGHUP(srv, logger)()
	err = srv.Serve(ctx, ln)
	logger.Info("SSH server stopped")
	return err
}

// fleetPools are the pools of the outboxes opened over SSH, one per outbox,
// and their consumer lag caches, one per outbox with brokers: the sessions
// that open an outbox share them.
type fleetPools struct {
	poller *fleet.Poller
	dial   func([]string) consumerlag.Dial
	mu     sync.Mutex
	pools  map[string]*pgxpool.Pool
	lags   map[string]fleetLag
}

type fleetLag struct {
	lag   console.ConsumerLag
	close func()
}

func (f *fleetPools) open(ctx context.Context, name string, operator bool) (console.Options, func(), error) {
	f.mu.Lock()
	pool, schema := f.pools[name], ""
	f.mu.Unlock()
	var outbox fleet.Outbox
	for _, o := range f.poller.Outboxes() {
		if o.Name == name {
			schema, outbox = o.Schema, o
		}
	}
	if pool == nil {
		np, _, err := f.poller.Open(ctx, name, 8)
		if err != nil {
			return console.Options{}, nil, err
		}
		f.mu.Lock()
		if pool = f.pools[name]; pool == nil {
			f.pools[name], pool = np, np
		} else {
			np.Close() // another session opened it meanwhile
		}
		f.mu.Unlock()
	}
	var opts []inspect.Option
	if !operator {
		opts = append(opts, inspect.ReadOnly())
	}
	in, err := inspect.New(pool, schema, opts...)
	if err != nil {
		return console.Options{}, nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.lags[name]
	if !ok {
		lag, closeLag, err := fleetOutboxLag(f.dial, outbox, pool)
		if err != nil {
			return console.Options{}, nil, err
		}
		l = fleetLag{lag, closeLag}
		f.lags[name] = l
	}
	return console.Options{Inspector: in, Consumers: l.lag, MissingTopics: missingTopicsOf(pool, schema)}, nil, nil
}

func (f *fleetPools) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.lags {
		l.close()
	}
	for _, p := range f.pools {
		p.Close()
	}
}
