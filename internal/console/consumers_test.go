package console

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/consumerlag"
	"github.com/outboxtop/outboxtop/internal/inspect"
)

type fakeLag struct {
	calls  atomic.Int32
	report consumerlag.Report
}

func (f *fakeLag) Report() consumerlag.Report {
	f.calls.Add(1)
	return f.report
}

func secs(d time.Duration) *consumerlag.Seconds {
	s := consumerlag.Seconds(d)
	return &s
}

// TestConsumersShowInboxAndLagSideBySide: an inbox consumer and the Kafka group
// of the same name on one line; groups without an inbox on their own; a group on
// two topics with a line per topic; a refused group and a broker error said.
func TestConsumersShowInboxAndLagSideBySide(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			lag := &fakeLag{}
			b := setup(t, Options{Consumers: lag})
			lag.report = consumerlag.Report{TakenAt: b.base.Add(-3 * time.Second), Groups: []consumerlag.Group{
				{Name: "billing", State: "Empty", Lag: 20, OldestAge: secs(time.Minute),
					Topics: []consumerlag.Topic{{Topic: "outbox.order", Lag: 20, OldestAge: secs(time.Minute)}}},
				{Name: "fulfilment\x1b[31m", State: "Stable", Members: 2, Lag: 7, OldestAge: secs(90 * time.Second), Topics: []consumerlag.Topic{
					{Topic: "outbox.invoice", Lag: 2, OldestAge: secs(5 * time.Second)},
					{Topic: "outbox.order", Lag: 5, OldestAge: secs(90 * time.Second)}}},
				{Name: "secret", Error: "describing: GROUP_AUTHORIZATION_FAILED: Not authorized to access group: Group authorization failed."},
				{Name: "shipping", State: "Stable", Members: 1, Topics: []consumerlag.Topic{{Topic: "outbox.order"}}},
			}, Errors: []string{"listing groups: broker 2 (kafka-2:9092): connection refused"}}
			b.size(size[0], size[1])
			if n := lag.calls.Load(); n != 0 {
				t.Fatalf("lag read %d times with the Overview open; only the Consumers view reads it", n)
			}
			b.keys("6")
			if lag.calls.Load() != 1 {
				t.Fatalf("lag read %d times on opening Consumers, want 1", lag.calls.Load())
			}
			screen := b.screen()
			if strings.Contains(screen, "\x1b[31m") {
				t.Fatal("a group name's escape sequence reached the screen")
			}
			golden(t, fmt.Sprintf("consumers-lag-%dx%d", size[0], size[1]), screen)
		})
	}
}

// TestLagReadsNeverOverlap: a slow lag check (a cluster failing over) is not
// asked again by every refresh while it runs.
func TestLagReadsNeverOverlap(t *testing.T) {
	t.Parallel()
	in, err := inspect.New(nil, "public")
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Inspector: in, Consumers: &fakeLag{}})
	if m.startLagLoad() != nil {
		t.Fatal("lag read with the Overview open")
	}
	m.view = viewInbox
	first := m.startLagLoad()
	if first == nil || m.startLagLoad() != nil {
		t.Fatal("want one read at a time")
	}
	m.Update(first())
	if m.startLagLoad() == nil {
		t.Fatal("no read after the last one finished")
	}
}
