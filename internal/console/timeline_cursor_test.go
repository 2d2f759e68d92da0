package console

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

func screenText(m *Model) string { return ansi.Strip(m.Render()) }

// timelineOf is a timeline of five published events, the failed blocker and a
// ready event waiting behind it.
func timelineOf(typ, id string) timelineMsg {
	tl := inspect.Timeline{AggregateType: typ, AggregateID: id, Waiting: 1}
	at := offlineNow.Add(-time.Hour)
	for i := range 7 {
		e := failedEvent("e"+string(rune('0'+i))+"000000-0000-4000-8000-000000000000", id, int64(i+1))
		e.LastError, e.FailedAt = "", nil
		switch {
		case i < 5:
			e.State, e.PublishedAt = wire.Published, &at
		case i == 5:
			e.State, e.FailedAt, e.LastError = wire.Failed, &at, "boom"
			b := e
			tl.Blocker = &b
		default:
			e.State = wire.Ready
		}
		tl.Events = append(tl.Events, inspect.TimelineEvent{Event: e})
	}
	tl.WaitingSince = &at
	return timelineMsg{typ: typ, id: id, tl: tl}
}

// TestTimelineOpensOnTheBlocker: a blocked aggregate's timeline opens with the
// cursor on its blocker, so s skips it at once; a later read leaves the cursor
// where the operator moved it.
func TestTimelineOpensOnTheBlocker(t *testing.T) {
	m := offline(t, 80, 24)
	press(m, "4")
	m.Update(listLoaded(m, viewFailed, inspect.Counts{Failed: 1}, failedEvent("e5000000-0000-4000-8000-000000000000", "ord-1", 6)))
	press(m, "A")
	tl := timelineOf("Order", "ord-1")
	m.Update(tl)
	r, _ := m.aggregate.table.current()
	if r.id != tl.tl.Blocker.EventID {
		t.Fatalf("the timeline opened on %s (seq %d), not on the blocker:\n%s", r.id, r.seq, screenText(m))
	}
	press(m, "s")
	if m.mode != modeConfirm || !strings.Contains(screenText(m), "Skip (archive unpublished) 1 event") {
		t.Fatalf("s on the blocker did not ask to skip it:\n%s", screenText(m))
	}
	press(m, "esc", "k", "k")
	moved, _ := m.aggregate.table.current()
	m.Update(tl)
	if r, _ := m.aggregate.table.current(); r.id != moved.id {
		t.Fatalf("a refresh moved the cursor from seq %d to seq %d", moved.seq, r.seq)
	}
	// Reopened, the timeline is read afresh and opens on the blocker again.
	press(m, "esc", "A")
	m.Update(tl)
	if r, _ := m.aggregate.table.current(); r.id != tl.tl.Blocker.EventID {
		t.Fatalf("reopened on seq %d, not on the blocker", r.seq)
	}
}
