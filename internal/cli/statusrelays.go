package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/outboxtop/outboxtop/inspect"
	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/tui"
)

// noRelayCheck names status's relay check in the verdict and the performance data.
const noRelayCheck = "no relay seen"

// checkNoRelay applies --warn-no-relay and --crit-no-relay (zero: off): the time
// since a relay was last live (inspect.Snapshot.NoRelayFor), and a relay never
// seen at all crosses every bound set. It sits beside fleet.Thresholds.Check
// rather than in it until the fleet checks it too (status --fleet refuses the
// flags meanwhile).
func checkNoRelay(c *fleet.Check, s inspect.Snapshot, warn, crit time.Duration) {
	if warn <= 0 && crit <= 0 {
		return
	}
	bound := func(d time.Duration) *float64 {
		if d <= 0 {
			return nil
		}
		v := d.Seconds()
		return &v
	}
	level := fleet.Warning
	if crit > 0 {
		level = fleet.Critical
	}
	age, seen := s.NoRelayFor()
	if !seen {
		c.Thresholds = append(c.Thresholds, fleet.Threshold{Name: noRelayCheck, Value: -1, Warning: bound(warn), Critical: bound(crit)})
		why := "no relay ever seen (no heartbeat, no live lease)"
		if s.RelaysError != "" {
			why = "no relay seen: " + tui.Sanitize(s.RelaysError)
		}
		c.Note(why, level)
		return
	}
	c.Thresholds = append(c.Thresholds, fleet.Threshold{Name: noRelayCheck, Value: age.Duration().Seconds(), Warning: bound(warn), Critical: bound(crit)})
	switch d := age.Duration(); {
	case crit > 0 && d > crit:
		c.Note(fmt.Sprintf("%s for %s > %s", noRelayCheck, age, crit), fleet.Critical)
	case warn > 0 && d > warn:
		c.Note(fmt.Sprintf("%s for %s > %s", noRelayCheck, age, warn), fleet.Warning)
	}
}

// printRelays is status's report of the relays seen: live ones first, at most ten.
func printRelays(w io.Writer, s inspect.Snapshot) {
	if s.RelaysError != "" {
		fmt.Fprintf(w, "relays: %s\n", tui.Sanitize(s.RelaysError))
	}
	if len(s.Relays) == 0 {
		fmt.Fprintln(w, "relays: none seen (no heartbeat, no live lease)")
		return
	}
	fmt.Fprintf(w, "relays: %d live of %d seen\n", s.RelaysLive(), len(s.Relays))
	for k, r := range s.Relays {
		if k == 10 {
			fmt.Fprintf(w, "  … (%d more)\n", len(s.Relays)-10)
			break
		}
		fmt.Fprintf(w, "  %-30s %-11s", short(tui.Sanitize(r.Holder), 30), r.State)
		if r.State != inspect.RelayLeasing {
			fmt.Fprintf(w, " seen %s ago", r.SeenAge)
		}
		fmt.Fprintf(w, "  leases %s", approx(r.Leases, r.LeasesApprox))
		if r.InFlight > 0 {
			fmt.Fprintf(w, "  in flight %d", r.InFlight)
		}
		if r.Version != "" {
			fmt.Fprintf(w, "  %s", short(tui.Sanitize(r.Version), 20))
		}
		fmt.Fprintln(w)
	}
}
