package console

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/console/internal/seed"
)

// TestAggregateTimelineOfABlockedAggregate opens Order/ord-1004 (a failed event
// with one waiting behind it) from the Overview's blocked aggregates, follows an
// event into its detail and back, and retries the blocker from the timeline.
func TestAggregateTimelineOfABlockedAggregate(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			b := setup(t, Options{})
			b.size(size[0], size[1])
			// The blocked aggregates are ranked by the events waiting behind the
			// blocker: ord-1004 (one) before the older ord-1003 (none).
			b.keys("1", "enter")
			if b.m.mode != modeAggregate || b.m.aggregate.title != "Order/ord-1004" {
				t.Fatalf("enter on the first blocked aggregate opened %q (mode %d):\n%s", b.m.aggregate.title, b.m.mode, b.text())
			}
			golden(t, fmt.Sprintf("aggregate-%dx%d", size[0], size[1]), b.screen())
			s := b.text()
			for _, want := range []string{"AGGREGATE Order/ord-1004", "BLOCKED by " + shortID(seed.ID('d', 2)) + " (failed 5m00s ago)",
				"1 waiting behind it for 4m00s", "NOT_LEADER_FOR_PARTITION", "FAILED!", "ready*"} {
				if !strings.Contains(s, want) {
					t.Errorf("timeline lacks %q:\n%s", want, s)
				}
			}
			rows := b.m.aggregate.table.rows
			if len(rows) != 2 || rows[0].id != seed.ID('d', 2) || rows[1].id != seed.ID('a', 1) {
				t.Fatalf("timeline rows: %+v", rows)
			}

			// enter: the event's detail; esc: back to the timeline.
			b.keys("j", "enter")
			if b.m.mode != modeDetail || b.m.detail.id != seed.ID('a', 1) {
				t.Fatalf("enter in the timeline: mode %d, detail %q", b.m.mode, b.m.detail.id)
			}
			b.keys("esc")
			if b.m.mode != modeAggregate {
				t.Fatalf("esc from the detail went to mode %d, not the timeline", b.m.mode)
			}

			// Retry does not apply to the ready event; it does to the blocker, and
			// the timeline shows it unblocked.
			b.keys("r")
			if b.m.mode != modeAggregate || !strings.Contains(b.text(), "retry does not apply to a ready event") {
				t.Fatalf("retry on a ready event:\n%s", b.text())
			}
			b.keys("k", "r")
			if b.m.mode != modeConfirm || !strings.Contains(b.text(), "Retry 1 event? type yes + enter: █ ("+shortID(seed.ID('d', 2))+")") {
				t.Fatalf("retry on the blocker:\n%s", b.text())
			}
			b.keys("y", "e", "s", "enter")
			if b.m.mode != modeAggregate {
				t.Fatalf("after the action: mode %d", b.m.mode)
			}
			if s := b.text(); !strings.Contains(s, "not blocked") || !strings.Contains(s, "retry: 1 of 1 event done") {
				t.Fatalf("after retrying the blocker:\n%s", s)
			}
			b.keys("esc")
			if b.m.mode != modeNormal || b.m.view != viewOverview {
				t.Fatalf("esc from the timeline: mode %d view %d", b.m.mode, b.m.view)
			}
		})
	}
}

func TestAggregateTimelineBySearch(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.keys("1", "/")
	b.m.filterInput = nil
	b.typeText("agg:Order/ord-1002")
	b.keys("enter")
	s := b.text()
	for _, want := range []string{"AGGREGATE Order/ord-1002", "not blocked", "[1]@8", "[1]@9"} {
		if !strings.Contains(s, want) {
			t.Errorf("timeline lacks %q:\n%s", want, s)
		}
	}
	b.keys("esc", "/")
	b.typeText("ord-1002") // agg: is filled in; no type
	b.keys("enter")
	if b.m.mode != modeNormal || !strings.Contains(b.text(), "agg:TYPE/ID") {
		t.Fatalf("an aggregate without its type:\n%s", b.text())
	}
	b.keys("/", "backspace", "backspace", "backspace", "backspace")
	b.typeText("Order/none")
	b.keys("enter")
	if !strings.Contains(b.text(), "no event of Order/none") {
		t.Fatalf("an unknown aggregate:\n%s", b.text())
	}
	// A on a list row opens its aggregate.
	b.keys("esc", "4", "A")
	if b.m.mode != modeAggregate || !strings.HasPrefix(b.m.aggregate.title, "Order/ord-100") {
		t.Fatalf("A in Failed: mode %d, %q", b.m.mode, b.m.aggregate.title)
	}
}

// TestBlockedCursorStaysInView: at 80×24 the Overview shows only some blocked
// aggregates; the cursor stops at the last one shown, never on one off screen,
// and the next j goes on to the error groups below.
func TestBlockedCursorStaysInView(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	for i := range 30 {
		if _, err := b.pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, created_at, failed_at, attempts, last_error)
			VALUES (gen_random_uuid(), 'Order', 'ord-9' || $1::text, 'OrderPlaced', '{}', $2, $2, 1, 'poison')`, fmt.Sprint(i), b.base.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	b.run(b.m.startLoad())
	b.keys("1")
	b.text()
	shown := 0
	for _, x := range b.m.overviewShown {
		if x.kind == targetBlocked {
			shown++
		}
	}
	if shown == 0 || shown >= len(b.m.overview.blocked) {
		t.Fatalf("%d blocked aggregates shown of %d", shown, len(b.m.overview.blocked))
	}
	for range shown - 1 {
		b.keys("j")
	}
	sel := b.m.overviewSel
	if sel != (overviewTarget{targetBlocked, shown - 1}) {
		t.Fatalf("cursor %v after %d j, want the last blocked aggregate shown (%d)", sel, shown-1, shown-1)
	}
	var cursorLine string
	for _, l := range strings.Split(b.text(), "\n") {
		if strings.HasPrefix(l, "> ") {
			cursorLine = l
		}
	}
	want := b.m.overview.blocked[sel.i].aggregate
	if !strings.Contains(cursorLine, want) {
		t.Fatalf("the cursor's line %q is not %s:\n%s", cursorLine, want, b.text())
	}
	b.keys("j")
	if sel := b.m.overviewSel; sel.kind == targetBlocked {
		t.Fatalf("j past the last blocked aggregate shown went to %v", sel)
	}
	b.keys("k", "enter")
	if b.m.aggregate.title != want {
		t.Fatalf("enter opened %q, want %q", b.m.aggregate.title, want)
	}
}

// TestSlowTimelineReadsAreSpacedOut: a timeline read that took 2 s is read again
// only after 9 × 2 s more, so an open timeline over a large published history
// costs the database at most a tenth of a backend; the title says so, and an
// action reads it again at once.
func TestSlowTimelineReadsAreSpacedOut(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.keys("1", "/")
	b.m.filterInput = nil
	b.typeText("agg:Order/ord-1002")
	b.keys("enter")
	if b.m.mode != modeAggregate || b.m.refreshAggregate() == nil {
		t.Fatalf("a fast timeline is read again with every refresh (mode %d)", b.m.mode)
	}
	b.m.aggregate.loading = false
	read := b.m.refreshAggregate()
	b.clock = b.clock.Add(2 * time.Second) // the read takes 2 s
	b.run(read)
	if s := b.text(); !strings.Contains(s, "slow read 2s: every 20s") {
		t.Errorf("the title does not say the read is slow:\n%s", s)
	}
	b.clock = b.clock.Add(17 * time.Second)
	if b.m.refreshAggregate() != nil {
		t.Fatal("read again 17 s after a 2 s read")
	}
	b.clock = b.clock.Add(time.Second)
	if b.m.refreshAggregate() == nil {
		t.Fatal("not read again 18 s after a 2 s read")
	}
	b.m.aggregate.loading = false
	b.m.aggregate.next = b.clock.Add(time.Hour)
	b.m.actionDone(actionDoneMsg{err: errors.New("refused")})
	if b.m.refreshAggregate() == nil {
		t.Fatal("an action does not read the timeline again at once")
	}
}

// TestSlowLoadsAreSpacedOut: the views' load (snapshot and the list on
// screen) that took 0.8 s starts again only 8 s after it started, not every
// second, so one console costs at most a tenth of a backend in an incident;
// the header says so, and a fast load brings the chosen interval back.
func TestSlowLoadsAreSpacedOut(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.size(120, 30)
	tick := func() bool {
		b.m.Update(tickMsg{gen: b.m.tickGen})
		started := b.m.loading
		b.m.loading = false
		return started
	}
	b.m.loadStarted = b.clock
	b.m.Update(loadedMsg{req: loadRequest{view: b.m.view}, overview: b.m.overview, took: 800 * time.Millisecond})
	if s := b.text(); !strings.Contains(s, "slow read 800ms: every 8s") {
		t.Errorf("the header does not say the reads are slow:\n%s", s)
	}
	b.clock = b.clock.Add(7900 * time.Millisecond)
	if tick() {
		t.Fatal("loaded again 7.9 s after a 0.8 s load started")
	}
	b.clock = b.clock.Add(100 * time.Millisecond)
	if !tick() {
		t.Fatal("not loaded again 8 s after a 0.8 s load started")
	}
	b.m.loadStarted = b.clock
	b.m.Update(loadedMsg{req: loadRequest{view: b.m.view}, overview: b.m.overview, took: 20 * time.Millisecond})
	b.clock = b.clock.Add(b.m.refresh)
	if !tick() || strings.Contains(b.text(), "slow read") {
		t.Errorf("after a fast load, not back to every %v:\n%s", b.m.refresh, b.text())
	}
}
