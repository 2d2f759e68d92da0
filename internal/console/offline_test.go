package console

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// offlineNow is the clock of the consoles built by offline.
var offlineNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// offline is a console whose commands are never run: the tests deliver the
// messages those commands would produce, so no database is needed. Its
// Inspector has no pool; running one of its commands would panic.
func offline(t testing.TB, w, h int) *Model {
	t.Helper()
	in, err := inspect.New(nil, "public")
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Inspector: in, Now: func() time.Time { return offlineNow }, Actor: "tester"})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

// press delivers a key to m and drops the command it returns.
func press(m *Model, keys ...string) {
	for _, k := range keys {
		m.Update(keyMsg(k))
	}
}

// listLoaded is the load of view v holding events, as the running load command
// would deliver it for m's current sort and filter.
func listLoaded(m *Model, v viewID, counts inspect.Counts, events ...inspect.Event) loadedMsg {
	msg := loadedMsg{req: loadRequest{view: v, list: listViews[v], filter: m.filters[v]},
		overview: overviewVM{takenAt: offlineNow, counts: counts}}
	if t := m.tables[v]; t != nil {
		msg.req.sort, msg.req.desc = t.sort, t.desc
	}
	for _, e := range events {
		msg.rows = append(msg.rows, newRow(e))
	}
	msg.total = inspect.Count{Value: int64(len(msg.rows))}
	return msg
}

func failedEvent(id, aggID string, seq int64) inspect.Event {
	at := offlineNow.Add(-time.Minute)
	return inspect.Event{EventID: id, Seq: seq, State: wire.Failed, AggregateType: "Order", AggregateID: aggID,
		EventType: "OrderPlaced", CreatedAt: at, AvailableAt: at, FailedAt: &at, Attempts: 3, LastError: "boom"}
}

// TestTimelineReadAfterEscIsDropped: esc closes the timeline while its read is
// in flight; the read's result arrives for a view that is gone and must not
// take the console down.
func TestTimelineReadAfterEscIsDropped(t *testing.T) {
	m := offline(t, 80, 24)
	press(m, "4")
	m.Update(listLoaded(m, viewFailed, inspect.Counts{Failed: 1}, failedEvent("d1000000-0000-4000-8000-000000000001", "ord-1", 1)))
	press(m, "A")
	if m.mode != modeAggregate {
		t.Fatalf("A did not open the timeline: mode %d", m.mode)
	}
	press(m, "esc")
	m.Update(timelineMsg{typ: "Order", id: "ord-1", tl: inspect.Timeline{Events: []inspect.TimelineEvent{{Event: failedEvent("d1000000-0000-4000-8000-000000000001", "ord-1", 1)}}}})
	if m.mode != modeNormal || m.aggregate.table != nil {
		t.Fatalf("a late timeline read reopened the timeline: mode %d", m.mode)
	}
	_ = m.Render()
}
