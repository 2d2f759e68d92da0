package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/outboxtop/outboxtop/inspect"
	"github.com/outboxtop/outboxtop/internal/sshconsole"
	"github.com/outboxtop/outboxtop/relay"
	"github.com/outboxtop/outboxtop/tui"
)

// serveFlags are outboxtop serve's flags: the SSH server's, and the console's.
type serveFlags struct {
	addr           string
	hostKey        string
	authorizedKeys string
	operators      string
	idleTimeout    time.Duration
	noRelay        bool
	readOnly       bool
	db             dbFlags
	relay          relayFlags
	log            logFlags
}

func (f *serveFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.addr, "ssh-addr", ":2222", "address the SSH server listens on")
	fs.StringVar(&f.hostKey, "host-key", "", "the server's private host key (generated, mode 0600, when the file does not exist) (required)")
	fs.StringVar(&f.authorizedKeys, "authorized-keys", "", "OpenSSH authorized_keys file of the keys that may log in, read-only (required)")
	fs.StringVar(&f.operators, "operators", "", "authorized_keys file of the keys that may also act (retry, park, …)")
	fs.DurationVar(&f.idleTimeout, "idle-timeout", 15*time.Minute, "close a console after this long without a key press (0: never)")
	fs.BoolVar(&f.noRelay, "no-relay", false, "do not embed a relay: the consoles only watch")
	fs.BoolVar(&f.readOnly, "read-only", false, "every session is read-only, operators included")
	f.log.register(fs)
	f.db.register(fs)
	f.relay.register(fs)
}

// runServe is outboxtop serve: the console over SSH, one per session, sharing
// one database pool and at most one embedded relay.
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
	}
	logger, err := f.log.logger(io.Err)
	if err != nil {
		return err
	}
	conns := int32(10)
	if !f.noRelay {
		if err := f.relay.resolve(f.db.schema, io); err != nil {
			return err
		}
		conns += int32(f.relay.cfg.InFlight)
	}
	pool, err := f.db.pool(ctx, io, conns)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := checkSchema(ctx, pool, f.db.schema); err != nil {
		return err
	}
	var opts []inspect.Option
	if f.readOnly {
		opts = append(opts, inspect.ReadOnly())
	}
	in, err := inspect.New(pool, f.db.schema, opts...)
	if err != nil {
		return usagef("--schema: %v", err)
	}
	ro, err := inspect.New(pool, f.db.schema, inspect.ReadOnly())
	if err != nil {
		return usagef("--schema: %v", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	console := tui.Options{Inspector: in, ReadOnly: f.readOnly}
	var wg sync.WaitGroup
	var relayErr error
	if !f.noRelay {
		client, err := relay.NewKafkaClient(f.relay.kafka)
		if err != nil {
			return usagef("%v", err)
		}
		defer client.Close()
		cfg := f.relay.cfg
		cfg.Logger = logger
		r, err := relay.New(pool, client, cfg)
		if err != nil {
			return usagef("%v", err)
		}
		console.Relay = relayControl{r}
		wg.Add(1)
		go func() {
			defer wg.Done()
			relayErr = r.Run(ctx)
			if relayErr != nil {
				cancel() // the consoles would show a relay that no longer runs
			}
		}()
		defer func() { cancel(); wg.Wait() }()
	}

	srv, err := sshconsole.New(sshconsole.Config{
		HostKeyPath:        f.hostKey,
		AuthorizedKeysPath: f.authorizedKeys,
		OperatorsPath:      f.operators,
		IdleTimeout:        f.idleTimeout,
		Console:            console,
		ReadOnlyInspector:  ro,
		Status:             statusWriter(in),
		Logger:             logger,
	})
	if err != nil {
		return usagef("%v", err)
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("--ssh-addr: %w", err)
	}
	logger.Info("serving the console over SSH", "addr", ln.Addr().String(), "host_key", srv.HostKeyFingerprint(),
		"relay", !f.noRelay, "read_only", f.readOnly, "idle_timeout", f.idleTimeout)
	err = srv.Serve(ctx, ln)
	cancel()
	wg.Wait()
	logger.Info("SSH server stopped")
	if relayErr != nil && !errors.Is(relayErr, context.Canceled) {
		return relayErr
	}
	return err
}

// statusWriter writes what `outboxtop status` prints without thresholds.
func statusWriter(in *inspect.Inspector) func(context.Context, io.Writer) error {
	return func(ctx context.Context, w io.Writer) error {
		s, err := in.Snapshot(ctx)
		if err != nil {
			return err
		}
		printStatus(w, s)
		fmt.Fprintln(w, "status: OK")
		return nil
	}
}
