package console

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// TestDemoExtrasStayInViewAfterAnOutage is the demo's console (its three
// fault switches, as `outboxtop demo` gives them) at 80×24 and up to 200×60:
// once b cuts the broker, the relay reports it unreachable, its batches given
// back, a long error, held heads and relays of its own, and the column beside
// the counts is full. Every extra's line, the kill-batch and duplicates one
// included, stays on the screen: the lines that give way are the relays' list
// and the error's continuation.
func TestDemoExtrasStayInViewAfterAnOutage(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	relay := &stubRelay{status: RelayStatus{BrokerReachable: true, LastBatch: 50, Published: 12000}}
	var outage atomic.Bool
	var kills atomic.Int64
	extras := []Extra{
		{
			Key: key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "broker outage")),
			Run: func(context.Context) (string, error) {
				outage.Store(true)
				relay.set(func(s *RelayStatus) {
					s.BrokerReachable, s.Released, s.HeadsLocked = false, 1200, 2
					s.LastError, s.LastErrorAt = strings.Repeat("kafka: dial tcp 127.0.0.1:9092: connection refused ", 6), at.Add(-time.Minute)
				})
				return "broker outage ON", nil
			},
			State: func() string {
				if outage.Load() {
					return "ON (b ends it)"
				}
				return "off"
			},
		},
		{Key: key.NewBinding(key.WithKeys("i"), key.WithHelp("i", "inject poison")), State: func() string { return "0 injected" }},
		{
			Key: key.NewBinding(key.WithKeys("!"), key.WithHelp("!", "kill batch")),
			Run: func(context.Context) (string, error) { kills.Add(1); return "kill #1", nil },
			State: func() string {
				return fmt.Sprintf("%d killed · %d dups absorbed", kills.Load(), 3*kills.Load())
			},
		},
	}
	snap := inspect.Snapshot{TakenAt: at, Counts: inspect.Counts{Ready: 607, Waiting: 506, Scheduled: 500, Pending: 1107, Failed: 4},
		Order: inspect.Order{Mode: "detect", Unserialized: 3}}
	for k := range 4 {
		snap.Relays = append(snap.Relays, inspect.RelaySeen{Holder: fmt.Sprintf("demo-%d:1", k), State: "running"})
	}
	in, err := inspect.New(nil, "public")
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range [][2]int{{80, 24}, {100, 30}, {120, 40}, {200, 60}} {
		outage.Store(false)
		kills.Store(0)
		relay.set(func(s *RelayStatus) { *s = RelayStatus{BrokerReachable: true, LastBatch: 50, Published: 12000} })
		m := New(Options{Inspector: in, Now: func() time.Time { return at }, Relay: relay, Extras: extras})
		m.Update(teaSize(size[0], size[1]))
		press := func(k string) {
			if _, cmd := m.Update(keyMsg(k)); cmd != nil {
				if msg, ok := cmd().(statusMsg); ok {
					m.Update(msg)
				}
			}
		}
		press("!")
		press("b")
		m.Update(loadedMsg{overview: newOverviewVM(snap, relay, extras)})
		screen := plain(m.Render())
		for _, want := range []string{"kill batch: 1 killed · 3 dups absorbed", "broker outage: ON (b ends it)", "inject poison: 0 injected",
			"UNREACHABLE", "last error", "kafka: dial tcp"} {
			if !strings.Contains(screen, want) {
				t.Errorf("at %dx%d after b the Overview lacks %q:\n%s", size[0], size[1], want, screen)
			}
		}
		lines := strings.Split(screen, "\n")
		if len(lines) != size[1] {
			t.Errorf("at %dx%d: %d lines", size[0], size[1], len(lines))
		}
		for i, l := range lines {
			if w := len([]rune(l)); w > size[0] {
				t.Errorf("at %dx%d: line %d is %d wide: %q", size[0], size[1], i, w, l)
			}
		}
	}
}

// TestRightColumnFit: the column gives way by rank, the last line of a rank
// first, ends in the marker, and keeps every extra.
func TestRightColumnFit(t *testing.T) {
	t.Parallel()
	var c rightColumn
	c.add(rankTitle, "RELAY", "state")
	c.add(rankErrorLabel, "last error")
	c.add(rankErrorFirst, "err 1")
	c.add(rankErrorMore, "err 2", "err 3")
	c.add(rankExtra, "x1", "x2", "x3")
	c.add(rankRelaysSeen, "relays seen")
	marker := func(n int) string { return fmt.Sprintf("… %d", n) }
	if got := c.fit(11, marker); len(got) != 10 {
		t.Errorf("fits: %q", got)
	}
	got := strings.Join(c.fit(8, marker), "|")
	if want := "RELAY|state|last error|err 1|x1|x2|x3|… 3"; got != want {
		t.Errorf("fit(8) = %s, want %s", got, want)
	}
	got = strings.Join(c.fit(5, marker), "|")
	if want := "RELAY|x1|x2|x3|… 6"; got != want {
		t.Errorf("fit(5) = %s, want %s", got, want)
	}
}
