package console

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// A bulk retry from the Failed view: * marks the listed rows, * again every
// matching event; r confirms with the pace and the time it would take; the
// progress row stays on every screen while the run goes, c cancels it and
// the row then says how to resume; c again closes it.
func TestBulkRetryProgressRow(t *testing.T) {
	t.Parallel()
	m := offline(t, 80, 24)
	press(m, "4")
	msg := listLoaded(m, viewFailed, inspect.Counts{Failed: 5000},
		failedEvent("d1000000-0000-4000-8000-000000000001", "ord-1", 1),
		failedEvent("d1000000-0000-4000-8000-000000000002", "ord-2", 2),
		failedEvent("d1000000-0000-4000-8000-000000000003", "ord-3", 3))
	msg.more, msg.total = true, inspect.Count{Value: 5000}
	m.Update(msg)
	press(m, "*")
	if s := screenText(m); !strings.Contains(s, "marked all 3 listed (* again: all 5000 matching)") {
		t.Fatalf("first *:\n%s", s)
	}
	press(m, "*")
	s := screenText(m)
	if !strings.Contains(s, "FAILED · all 5000 marked") || !strings.Contains(s, "marked all 5000 matching: r acts on every one (paced past 1000)") {
		t.Fatalf("second *:\n%s", s)
	}
	press(m, "r")
	if m.mode != modeConfirm {
		t.Fatalf("r did not ask: mode %d", m.mode)
	}
	// The count first, typed exactly; then yes.
	if s := screenText(m); m.confirm.prompt() != "Retry all 5000 matching events? type 5000 + enter: █ (at 100/s, ~49s · no filter)" ||
		!strings.Contains(s, "type 5000, enter the count, then yes • any other key cancel") {
		t.Fatalf("confirmation:\n%s", s)
	}
	press(m, "y")
	if m.mode == modeConfirm || !strings.Contains(screenText(m), "cancelled: nothing changed") {
		t.Fatalf("y at the count did not cancel:\n%s", screenText(m))
	}
	press(m, "r", "5", "0", "0", "enter")
	if m.mode == modeConfirm || m.bulk.run != nil {
		t.Fatal("a count short of the whole one did not cancel")
	}
	press(m, "r", "5", "0", "0", "0", "enter")
	if s := screenText(m); m.bulk.run != nil || m.mode != modeConfirm || !strings.Contains(s, "Retry all 5000 matching events? type yes + enter: █ (at 100/s") {
		t.Fatalf("after the count:\n%s", s)
	}
	press(m, "y", "e", "s")
	_, cmd := m.Update(keyMsg("enter"))
	if cmd == nil || m.bulk.run == nil {
		t.Fatal("yes started no run")
	}
	r := m.bulk.run
	if r.prog.Target != BulkRate {
		t.Fatalf("the run's rate %v, want %v", r.prog.Target, BulkRate)
	}
	// The run's command reports; a test delivers what it would.
	m.Update(bulkStartedMsg{action: inspect.Retry, id: "6930a1b2-3f9a2c", total: 5000, ch: make(chan tea.Msg)})
	m.Update(bulkProgressMsg{inspect.Progress{Run: "6930a1b2-3f9a2c", Action: inspect.Retry, Total: 5000, Done: 1200,
		Changed: 1200, Rate: 100, Target: 100, ETA: 38 * time.Second}})
	row := " retry 1200/5000 24% [██░░░░░░░░] 100/s eta 38s · run 6930a1b2-3f9a2c · c stops"
	if w := len([]rune(row)); w > 80 {
		t.Fatalf("the row takes %d cells", w)
	}
	for _, view := range []string{"4", "1", "2"} {
		press(m, view)
		s := screenText(m)
		lines := strings.Split(s, "\n")
		if len(lines) != 24 || !strings.Contains(s, row) || strings.TrimRight(lines[21], " ") != row {
			t.Fatalf("view %s: no progress row above the status line (%d lines):\n%s", view, len(lines), s)
		}
	}
	press(m, "c")
	if !r.cancelled {
		t.Fatal("c did not cancel the run")
	}
	if s := screenText(m); !strings.Contains(s, "stopping after this chunk…") {
		t.Fatalf("cancelling:\n%s", s)
	}
	m.Update(bulkDoneMsg{res: inspect.PacedResult{Progress: inspect.Progress{Run: "6930a1b2-3f9a2c", Action: inspect.Retry,
		Total: 5000, Done: 1300, Changed: 1300}}, err: context.Canceled})
	s = screenText(m)
	if !strings.Contains(s, " retry stopped 1300/5000 · outboxtop retry --resume 6930a1b2-3f9a2c\n") {
		t.Fatalf("after the cancel:\n%s", s)
	}
	press(m, "c")
	if m.bulk.run != nil || strings.Contains(screenText(m), "c closes") {
		t.Fatalf("c did not close the row:\n%s", screenText(m))
	}
}

// A bulk mark does not survive esc; park has no bulk form and says so.
func TestBulkMarkClearsAndIsForPacedActionsOnly(t *testing.T) {
	t.Parallel()
	m := offline(t, 80, 24)
	press(m, "2")
	msg := listLoaded(m, viewPending, inspect.Counts{Pending: 3000},
		failedEvent("d1000000-0000-4000-8000-000000000001", "ord-1", 1))
	msg.more, msg.total = true, inspect.Count{Value: 3000}
	m.Update(msg)
	press(m, "*", "*", "x")
	if m.mode == modeConfirm || !strings.Contains(screenText(m), "park acts on rows you mark") {
		t.Fatalf("x over all matching:\n%s", screenText(m))
	}
	press(m, "esc")
	if m.allMarked(viewPending) {
		t.Fatal("esc left every matching event marked")
	}
	press(m, "r")
	if m.confirm == nil || m.confirm.bulk {
		t.Fatalf("after esc r is a bulk action: %+v", m.confirm)
	}
	// In Pending, a bulk retry says it takes the scheduled events.
	press(m, "esc", "*", "*", "r")
	if s := screenText(m); !strings.Contains(s, "Retry the scheduled of all 3000 matching events? type 3000 + enter: █ (at 100/") {
		t.Fatalf("bulk retry in Pending:\n%s", s)
	}
}

// A small bulk action (up to BulkPaceAbove events) is not paced.
func TestSmallBulkIsNotPaced(t *testing.T) {
	t.Parallel()
	m := offline(t, 80, 24)
	press(m, "4")
	msg := listLoaded(m, viewFailed, inspect.Counts{Failed: 800},
		failedEvent("d1000000-0000-4000-8000-000000000001", "ord-1", 1))
	msg.more, msg.total = true, inspect.Count{Value: 800}
	m.Update(msg)
	press(m, "*", "*", "r")
	if s := screenText(m); !strings.Contains(s, "Retry all 800 matching events? type 800 + enter: █ (no filter)") {
		t.Fatalf("confirmation:\n%s", s)
	}
}

// Against the database: a bulk retry over the Failed view's filter runs to
// the end and retries every failed event once.
func TestBulkRetryRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{Limit: 1})
	b.keys("4")
	b.keys("*", "*")
	if !b.m.allMarked(viewFailed) {
		t.Fatalf("not all matching marked:\n%s", b.screen())
	}
	b.keys("r", "3", "enter", "y", "e", "s", "enter")
	s := b.screen()
	if !strings.Contains(s, "done: 3 of 3 changed") {
		t.Fatalf("after the run:\n%s", s)
	}
	var n int
	if err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_audit WHERE action = 'retry' AND filter ? 'run'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d audit rows of the run %v", n, err)
	}
}
