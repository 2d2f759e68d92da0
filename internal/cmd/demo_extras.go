package cmd

import (
	"context"
	"fmt"

	"charm.land/bubbles/v2/key"

	"github.com/outboxtop/outboxtop/internal/console"
	"github.com/outboxtop/outboxtop/internal/demo"
)

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
