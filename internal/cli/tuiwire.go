package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/outboxtop/outboxtop/inspect"
	"github.com/outboxtop/outboxtop/relay"
	"github.com/outboxtop/outboxtop/tui"
)

// runTUI opens the console: the database, the schema check, the embedded relay
// (unless --no-relay) and the Bubble Tea program. The relay's logs are discarded
// while the console owns the terminal; its last error shows in the Overview.
func runTUI(ctx context.Context, c *consoleFlags, io IO) error {
	conns := int32(6)
	if !c.noRelay {
		if err := c.relay.resolve(c.db.schema, io); err != nil {
			return err
		}
		conns += int32(c.relay.cfg.InFlight)
	}
	pool, err := c.db.pool(ctx, io, conns)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := checkSchema(ctx, pool, c.db.schema); err != nil {
		return err
	}
	var opts []inspect.Option
	if c.readOnly {
		opts = append(opts, inspect.ReadOnly())
	}
	in, err := inspect.New(pool, c.db.schema, opts...)
	if err != nil {
		return err
	}
	actor := c.actor
	if actor == "" {
		actor = inspect.DefaultActor(io.Getenv)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	topts := tui.Options{Inspector: in, ReadOnly: c.readOnly, Actor: actor, Context: ctx}

	var wg sync.WaitGroup
	var relayErr error
	if !c.noRelay {
		client, err := relay.NewKafkaClient(c.relay.kafka)
		if err != nil {
			return usagef("%v", err)
		}
		defer client.Close()
		cfg := c.relay.cfg
		cfg.Logger = slog.New(slog.DiscardHandler)
		// q should quit promptly: in-flight batches get a short grace, then their
		// leases are released (the events are published by the next claim).
		if cfg.ShutdownTimeout > consoleShutdown && c.relay.cfg.ShutdownTimeout == relay.DefaultConfig.ShutdownTimeout {
			cfg.ShutdownTimeout = consoleShutdown
		}
		r, err := relay.New(pool, client, cfg)
		if err != nil {
			return usagef("%v", err)
		}
		topts.Relay = relayControl{r}
		wg.Add(1)
		go func() {
			defer wg.Done()
			relayErr = r.Run(ctx)
			if relayErr != nil {
				cancel() // the console would show a relay that no longer runs
			}
		}()
	}
	err = tui.Run(topts)
	cancel()
	if topts.Relay != nil && topts.Relay.Status().InFlight > 0 {
		fmt.Fprintln(io.Err, "outboxtop: stopping the relay: waiting for in-flight batches")
	}
	wg.Wait()
	if relayErr != nil && !errors.Is(relayErr, context.Canceled) {
		return relayErr
	}
	return err
}

// consoleShutdown replaces the default --shutdown-timeout in the console.
const consoleShutdown = 3 * time.Second

// relayControl adapts *relay.Relay to the console's small interface.
type relayControl struct{ r *relay.Relay }

func (c relayControl) Pause()  { c.r.Pause() }
func (c relayControl) Resume() { c.r.Resume() }
func (c relayControl) Status() tui.RelayStatus {
	s := c.r.Status()
	return tui.RelayStatus{
		Paused: s.Paused, BrokerReachable: s.BrokerReachable, InFlight: s.InFlight,
		Published: s.Published, Failed: s.Failed, Retried: s.Retried, LostFences: s.LostFences,
		LastClaim: s.LastClaim, LastPublish: s.LastPublish, LastBatch: s.LastBatch,
		LastError: s.LastError, LastErrorAt: s.LastErrorAt,
	}
}
