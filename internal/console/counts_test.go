package console

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// TestTabAndListAgreeOnTheCount: the open tab's number is its list title's; an
// lower bound below the rows listed is raised to them, and stays marked.
func TestTabAndListAgreeOnTheCount(t *testing.T) {
	leased := inspect.Event{EventID: "d3000000-0000-4000-8000-000000000003", State: wire.Leased, AggregateType: "Order",
		AggregateID: "ord-3", EventType: "OrderPlaced", CreatedAt: offlineNow, AvailableAt: offlineNow}
	for _, c := range []struct {
		name   string
		counts inspect.Counts
		total  inspect.Count // the list's own count
		tab    string
		title  string
	}{
		{"lower bound below the rows", inspect.Counts{Leased: 0, Bounds: inspect.Bounds{Leased: inspect.LowerBound}}, inspect.Count{Value: 1, Estimate: true}, "3 Leased ≥1", "LEASED · 1 of ≥1"},
		{"exact, read before the row came", inspect.Counts{Leased: 0}, inspect.Count{Value: 1}, "3 Leased 1", "LEASED · 1 listed"},
		{"lower bound above the rows", inspect.Counts{Leased: 40, Bounds: inspect.Bounds{Leased: inspect.LowerBound}}, inspect.Count{Value: 1, Estimate: true}, "3 Leased ≥40", "LEASED · 1 of ≥40"},
	} {
		m := offline(t, 120, 30)
		press(m, "3")
		msg := listLoaded(m, viewLeased, c.counts, leased)
		msg.total = c.total
		m.Update(msg)
		s := screenText(m)
		if !strings.Contains(s, c.tab) || !strings.Contains(s, c.title) {
			t.Errorf("%s: want tab %q and title %q:\n%s", c.name, c.tab, c.title, s)
		}
	}
}

// TestShortIDOfUUIDv7IsItsEnd: the lists name a UUIDv7 by its last 8 hex
// digits, as the demo's toasts do.
func TestShortIDOfUUIDv7IsItsEnd(t *testing.T) {
	id := "01a23392-0001-7000-8000-0000ab858c44"
	if got := shortID(id); got != "ab858c44" || got != id[28:] {
		t.Fatalf("shortID(%s) = %s", id, got)
	}
}

// TestOverviewCountsUnserializedAggregates: the Overview says how many
// aggregates may be out of commit order, as an estimate, only when there are
// any.
func TestOverviewCountsUnserializedAggregates(t *testing.T) {
	for _, c := range []struct {
		order inspect.Order
		want  string
	}{
		{inspect.Order{Mode: "detect", Unserialized: 3}, "unserialized   ~3 aggregates"},
		{inspect.Order{Mode: "detect", Unserialized: 10_001, Bound: inspect.LowerBound}, "unserialized   ≥10k aggregates"},
		{inspect.Order{Mode: "enforce"}, ""},
		{inspect.Order{Mode: "enforce", Waiting: 2, Holders: []inspect.OrderHolder{{PID: 77, Open: inspect.Age(90 * time.Second)}}}, "order lock     2 wait on pid 77 1m30s"},
	} {
		m := offline(t, 80, 24)
		msg := listLoaded(m, viewOverview, inspect.Counts{})
		msg.overview.order = c.order
		m.Update(msg)
		s := screenText(m)
		if c.want != "" && !strings.Contains(s, c.want) || c.want == "" && (strings.Contains(s, "unserialized") || strings.Contains(s, "order lock")) {
			t.Errorf("%+v: want %q on the Overview:\n%s", c.order, c.want, s)
		}
	}
}
