package cmd

import (
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"io"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// printRelays is status's report of the relays seen: live ones first, at most ten.
func printRelays(w io.Writer, s inspect.Snapshot) {
	if s.RelaysError != "" {
		fmt.Fprintf(w, "relays: %s\n", termtext.Sanitize(s.RelaysError))
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
		fmt.Fprintf(w, "  %-30s %-11s", short(termtext.Sanitize(r.Holder), 30), r.State)
		if r.State != inspect.RelayLeasing {
			fmt.Fprintf(w, " seen %s ago", r.SeenAge)
		}
		fmt.Fprintf(w, "  leases %s", approx(r.Leases, r.LeasesApprox))
		if r.InFlight > 0 {
			fmt.Fprintf(w, "  in flight %d", r.InFlight)
		}
		if r.Version != "" {
			fmt.Fprintf(w, "  %s", short(termtext.Sanitize(r.Version), 20))
		}
		fmt.Fprintln(w)
	}
}
