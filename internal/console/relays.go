package console

import (
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// relaySeenVM is one relay of Snapshot.Relays as the Overview shows it.
type relaySeenVM struct {
	holder, state string // sanitized
	seenAge       time.Duration
	leases        int64
	live          bool
}

// relaysVM is the Overview's "relays seen": every relay process the outbox
// knows of (heartbeats and lease holders), live ones first.
type relaysVM struct {
	list       []relaySeenVM
	live, gone int
	err        string
}

func newRelaysVM(s inspect.Snapshot) relaysVM {
	vm := relaysVM{live: s.RelaysLive(), err: termtext.Sanitize(s.RelaysError)}
	for _, r := range s.Relays {
		vm.list = append(vm.list, relaySeenVM{holder: termtext.Sanitize(r.Holder), state: termtext.Sanitize(r.State),
			seenAge: r.SeenAge.Duration(), leases: r.Leases, live: r.Live()})
		if r.State == inspect.RelayGone {
			vm.gone++
		}
	}
	return vm
}

// relaysSummary is the RELAY section's "relays seen" value: how many are live,
// and the gone ones flagged (a relay that stopped beating without a clean exit).
func (m *Model) relaysSummary() string {
	vm, st := m.overview.relays, m.styles
	var s string
	switch {
	case len(vm.list) == 0 && vm.err != "":
		return st.dim.Render("unknown (no grant)")
	case len(vm.list) == 0:
		return st.warn.Render("none")
	case vm.live == 0:
		s = st.bad.Render("none live")
	default:
		s = fmt.Sprintf("%d live", vm.live)
	}
	if vm.gone > 0 {
		s += " · " + st.warn.Render(fmt.Sprintf("%d gone", vm.gone))
	}
	return s
}

// relayLines lists the relays seen in at most n lines of width w (the last one
// says how many more when they do not fit): holder, state, and how long ago it
// beat or how many leases it holds. Gone and stopped ones are dimmed, gone
// flagged.
func (m *Model) relayLines(n, w int, since time.Duration) []string {
	vm, st := m.overview.relays, m.styles
	if n <= 0 || len(vm.list) == 0 {
		return nil
	}
	list := vm.list
	more := 0
	if len(list) > n {
		more = len(list) - (n - 1)
		list = list[:n-1]
	}
	holderW := max(min(w-24, 28), 8) // room for " state(11) 3m00s ago"
	var lines []string
	for _, r := range list {
		what := age(r.seenAge+since) + " ago"
		if r.state == inspect.RelayLeasing {
			what = fmt.Sprintf("%d lease", r.leases)
			if r.leases != 1 {
				what += "s"
			}
		}
		if r.state != inspect.RelayLeasing && r.leases > 0 && w >= 56 {
			what += fmt.Sprintf(" · %d lease", r.leases)
			if r.leases != 1 {
				what += "s"
			}
		}
		line := fmt.Sprintf(" %-*s %-11s %s", holderW, fitHolder(r.holder, holderW), r.state, what)
		switch {
		case r.state == inspect.RelayGone:
			line = st.warn.Render("!" + line[1:])
		case !r.live:
			line = st.dim.Render(line)
		}
		lines = append(lines, line)
	}
	if more > 0 {
		lines = append(lines, st.dim.Render(fmt.Sprintf("  … %d more", more)))
	}
	return lines
}
