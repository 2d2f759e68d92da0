package console

import (
	"fmt"
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/console/internal/seed"
	"github.com/outboxtop/outboxtop/internal/inspect"
)

// TestArchivedViewReplay archives a published event and skips a blocker from the
// console, lists both in tab 5's Archived view and replays the archived event:
// it is back in the outbox with replay_of set, and an audit row says who did it.
func TestArchivedViewReplay(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.keys("5", "G", "a", "y", "e", "s", "enter") // e0000001, the oldest published
	if n := b.count(`SELECT count(*) FROM outbox_event_archive WHERE event_id = $1`, seed.ID('e', 1)); n != 1 {
		t.Fatalf("e0000001 not archived:\n%s", b.text())
	}
	b.keys("4", "s")
	b.typeText("poison, see ticket 12")
	b.keys("enter", "y", "e", "s", "enter") // d0000002, the newest failed, blocks ord-1004
	b.keys("5", "v")
	if b.m.view != viewArchived {
		t.Fatalf("v in Published: view %d", b.m.view)
	}
	s := b.text()
	for _, want := range []string{"5 Archived 2", "ARCHIVED · 2 listed", shortID(seed.ID('e', 1)), "1h59m", "skipped", "skipped by tes"} {
		if !strings.Contains(s, want) {
			t.Errorf("the Archived view lacks %q:\n%s", want, s)
		}
	}
	b.keys("G", "enter") // e0000001, archived first
	if b.m.mode != modeDetail || !strings.Contains(b.text(), seed.ID('e', 1)) || !strings.Contains(b.text(), "archived") {
		t.Fatalf("enter on an archived event:\n%s", b.text())
	}
	b.keys("esc", "tab")
	if b.m.view != viewInbox {
		t.Fatalf("tab from Archived: view %d, want Consumers", b.m.view)
	}
	// Tab 5 opens on Published again; v switches to Archived.
	b.keys("5")
	if b.m.view != viewPublished {
		t.Fatalf("5 after Archived shows view %d", b.m.view)
	}
	b.keys("v", "/")
	b.typeText("id:" + shortID(seed.ID('e', 1)))
	b.keys("enter", "R")
	if b.m.mode != modeConfirm || !strings.Contains(b.text(), "Replay 1 event? type yes (same ids) or new (new ids) + enter: █") {
		t.Fatalf("R did not ask:\n%s", b.text())
	}
	b.keys("y", "e", "s", "enter")
	if n := b.count(`SELECT count(*) FROM outbox_event WHERE event_id = $1 AND replay_of = $1 AND published_at IS NULL`, seed.ID('e', 1)); n != 1 {
		t.Fatalf("e0000001 was not replayed into the outbox:\n%s", b.text())
	}
	if n := b.count(`SELECT count(*) FROM outbox_event_archive WHERE event_id = $1`, seed.ID('e', 1)); n != 0 {
		t.Errorf("e0000001 is still archived")
	}
	if n := b.count(`SELECT count(*) FROM outbox_audit WHERE action = 'replay' AND actor = 'tester' AND rows = 1 AND event_ids = ARRAY[$1::uuid]`, seed.ID('e', 1)); n != 1 {
		t.Errorf("%d replay audit rows, want 1", n)
	}
	if s := b.text(); !strings.Contains(s, "replay: 1 of 1 event done") || !strings.Contains(s, "ARCHIVED · 0 listed") {
		t.Errorf("after the replay:\n%s", s)
	}
}

// TestReplayNewIDFromPublished: new answers the replay prompt with new ids — a new
// event whose replay_of is the original, which stays published.
func TestReplayNewIDFromPublished(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.keys("5") // the cursor is on e0000004, the newest published
	b.keys("R")
	golden(t, "replay-confirm-80x24", b.screen())
	b.size(120, 40)
	golden(t, "replay-confirm-120x40", b.screen())
	b.size(80, 24)
	b.keys("n", "e", "w", "enter")
	if n := b.count(`SELECT count(*) FROM outbox_event WHERE replay_of = $1 AND event_id <> $1 AND published_at IS NULL`, seed.ID('e', 4)); n != 1 {
		t.Fatalf("%d new events replay e0000004, want 1:\n%s", n, b.text())
	}
	if n := b.count(`SELECT count(*) FROM outbox_event WHERE event_id = $1 AND published_at IS NOT NULL`, seed.ID('e', 4)); n != 1 {
		t.Errorf("the original is no longer published")
	}
	if n := b.count(`SELECT count(*) FROM outbox_audit WHERE action = 'replay' AND actor = 'tester' AND rows = 1 AND (filter->>'new_id')::boolean`); n != 1 {
		t.Errorf("%d replay audit rows with new_id, want 1", n)
	}
	if s := b.text(); !strings.Contains(s, "; new ids ") {
		t.Errorf("the status does not name the new id:\n%s", s)
	}
	// Any other key cancels: i (the old key for new ids), or enter short of
	// a whole answer.
	for _, keys := range [][]string{{"i"}, {"n", "enter"}, {"n", "e", "s"}, {"y", "e", "w"}} {
		b.keys(append([]string{"R"}, keys...)...)
		if n := b.count(`SELECT count(*) FROM outbox_audit WHERE action = 'replay'`); n != 1 || b.m.mode == modeConfirm || !strings.Contains(b.text(), "cancelled") {
			t.Errorf("%v did not cancel the replay (%d audit rows):\n%s", keys, n, b.text())
		}
	}
}

// TestReplayRefusedReadOnly: a read-only console refuses replay in Published and
// Archived and offers no R.
func TestReplayRefusedReadOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{ReadOnly: true})
	if _, err := b.pool.Exec(t.Context(), `SELECT outboxtop_archive('ops', '', ARRAY[$1::uuid], '{}', NULL)`, seed.ID('e', 1)); err != nil {
		t.Fatal(err)
	}
	for _, keys := range [][]string{{"5"}, {"v"}} {
		b.keys(keys...)
		b.keys("R")
		if b.m.mode == modeConfirm || !strings.Contains(b.text(), "read-only console: actions are refused") {
			t.Fatalf("R in %s of a read-only console:\n%s", listViews[b.m.view].title, b.text())
		}
		if strings.Contains(b.text(), "R replay") {
			t.Errorf("the footer offers R:\n%s", b.text())
		}
	}
	if n := b.count(`SELECT count(*) FROM outbox_audit WHERE action = 'replay'`); n != 0 {
		t.Errorf("%d replay audit rows in a read-only console", n)
	}
	b.keys("?")
	if strings.Contains(b.text(), "replay") {
		t.Errorf("help offers replay:\n%s", b.text())
	}
}

// TestGoldenArchived: the Archived view with an archived and a skipped event.
func TestGoldenArchived(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			b := setup(t, Options{})
			in := b.in
			for _, r := range []inspect.Request{
				{Action: inspect.Archive, IDs: []string{seed.ID('e', 1), seed.ID('e', 2)}, Actor: "ops"},
				{Action: inspect.Skip, IDs: []string{seed.ID('d', 1)}, Reason: "too big, resent by hand", Actor: "ops"},
			} {
				if _, err := in.Do(t.Context(), r); err != nil {
					t.Fatal(err)
				}
			}
			b.size(size[0], size[1])
			b.keys("5", "v")
			golden(t, fmt.Sprintf("5-Archived-%dx%d", size[0], size[1]), b.screen())
		})
	}
}
