package cmd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// TestStatusSaysTheCommitOrder: one line for the mode and, when aggregates
// are of unknown order, their count and the first five,
// their hostile text made inert.
func TestStatusSaysTheCommitOrder(t *testing.T) {
	at := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)
	var aggs []inspect.UnserializedAggregate
	for i := range 7 {
		aggs = append(aggs, inspect.UnserializedAggregate{AggregateType: "order", AggregateID: fmt.Sprintf("o-%d\x1b[2J", i), Events: int64(9 - i), LastAt: at})
	}
	for _, c := range []struct {
		o    inspect.Order
		want []string
	}{
		{inspect.Order{Mode: "enforce"}, []string{"commit order enforced: seq order is commit order for every aggregate"}},
		{inspect.Order{Mode: "detect"}, []string{"commit order detected: no aggregate of unknown order"}},
		{inspect.Order{Mode: "off"}, []string{"commit order off: seq is insertion order, unchecked (outboxtop migrate --commit-order)"}},
		{inspect.Order{Mode: "detect", Unserialized: 7, Aggregates: aggs}, []string{
			"commit order detect: 7 aggregates of unknown order (events from overlapping transactions, or present when the table was adopted: their seq order, the order they are published in, may not be their commit order; most marked first):",
			"  order/o-0^[[2J: 9 events, the last at 2026-12-03T07:00:00Z",
			"  … (2 more)"}},
		{inspect.Order{Mode: "enforce", Waiting: 3, Holders: []inspect.OrderHolder{{PID: 4242, Role: "billing", Application: "orders\x1b[2J", State: "idle in transaction", Open: inspect.Age(5 * time.Minute)}}},
			[]string{"commit order enforced", "3 inserts waiting for an order lock, held by pid 4242 (role billing, application orders^[[2J, idle in transaction, transaction open 5m0s)"}},
	} {
		var b strings.Builder
		printOrder(&b, c.o)
		got := b.String()
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%+v: want %q in:\n%s", c.o.Mode, w, got)
			}
		}
		if strings.Contains(got, "\x1b") {
			t.Errorf("an escape reached the output:\n%q", got)
		}
	}
}
