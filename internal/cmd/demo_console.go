package cmd

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"charm.land/bubbles/v2/key"

	"github.com/outboxtop/outboxtop/internal/console"
	"github.com/outboxtop/outboxtop/internal/demo"
	"github.com/outboxtop/outboxtop/internal/inspect"
)

// runDemoConsole opens the console on the running demo, with its fault
// switches as extra keys, until the operator quits or ctx ends.
func runDemoConsole(ctx context.Context, d *demo.Demo, cfg demo.Config, io IO) error {
	in, err := inspect.New(d.Pool, cfg.Relay.Schema)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var runErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		runErr = d.Run(ctx)
		if runErr != nil {
			cancel() // the console would show a demo that no longer runs
		}
	}()
	opts := console.Options{
		Inspector: in,
		Relay:     d.Relay,
		Actor:     inspect.DefaultActor(io.Getenv),
		Context:   ctx,
		Extras:    demoExtras(d),
	}
	kc := cfg.Kafka
	kc.Brokers = d.Brokers()
	opts.Kafka = kafkaClientFor(kc)
	var lag lagFlags
	closeLag, err := lag.consoleLag(&opts, kc, d.Pool, cfg.Relay.Schema)
	if err != nil {
		return err
	}
	defer closeLag()
	err = console.Run(opts)
	cancel()
	fmt.Fprintln(io.Err, "outboxtop demo: stopping; removing the throwaway database")
	wg.Wait()
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return fmt.Errorf("demo: %w", runErr)
	}
	return err
}

// demoExtras are the demo's fault switches. The console lists them in its
// help under "extras" and shows their state in the Overview.
func demoExtras(d *demo.Demo) []console.Extra {
	return []console.Extra{
		{
			Key: key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "broker outage")),
			Run: func(context.Context) (string, error) {
				if d.Outage() {
					d.SetOutage(false)
					return "broker outage OFF: the relay reconnects and catches up", nil
				}
				d.SetOutage(true)
				return "broker outage ON: relay cut off from Kafka; it backs off, burns no attempts", nil
			},
			State: func() string {
				if d.Outage() {
					return "ON (b ends it)"
				}
				return "off"
			},
		},
		{
			Key: key.NewBinding(key.WithKeys("i"), key.WithHelp("i", "inject poison")),
			Run: d.InjectPoison,
			State: func() string {
				return fmt.Sprintf("%d injected", d.Counters.Snapshot().Poisoned)
			},
		},
		{
			// Not K: that is shift+k, a slip away from k (up), and this asks nothing.
			Key: key.NewBinding(key.WithKeys("!"), key.WithHelp("!", "kill batch")),
			Run: func(context.Context) (string, error) {
				n := d.KillBatch()
				return fmt.Sprintf("kill #%d: next batch dies after Kafka's ack; the inbox absorbs its redelivery", n), nil
			},
			State: func() string {
				return fmt.Sprintf("%d killed · %d dups absorbed", d.Kills(), d.Counters.Snapshot().Duplicates)
			},
		},
	}
}
