package console

import (
	"context"
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/console/internal/seed"
)

func TestAuditLogViewFilters(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.keys("4", "r", "y", "e", "s", "enter") // retry d0000002 as tester
	if _, err := b.pool.Exec(context.Background(), `SELECT outboxtop_audit_write('alice via ssh from 203.0.113.7', 'park', '{}', ARRAY[$1::uuid], 1, 'waiting for finance')`, seed.ID('d', 3)); err != nil {
		t.Fatal(err)
	}
	b.keys("L")
	if b.m.mode != modeAudit {
		t.Fatalf("L did not open the audit log:\n%s", b.text())
	}
	golden(t, "audit-80x24", b.screen())
	s := b.text()
	if strings.Index(s, "park") > strings.Index(s, "retry") || !strings.Contains(s, "tester") || !strings.Contains(s, shortID(seed.ID('d', 3))+"    waiting for finance") {
		t.Fatalf("audit log:\n%s", s)
	}
	b.keys("/")
	b.typeText("action:retry")
	b.keys("enter")
	if s := b.text(); strings.Contains(s, "alice") || !strings.Contains(s, "tester") || !strings.Contains(s, "filter action:retry") {
		t.Fatalf("action:retry:\n%s", s)
	}
	b.keys("/", "ctrl+u")
	b.typeText("ALICE newer:1h")
	b.keys("enter")
	if s := b.text(); !strings.Contains(s, "alice") || strings.Contains(s, "tester") {
		t.Fatalf("alice newer:1h:\n%s", s)
	}
	b.keys("/", "ctrl+u")
	b.typeText("older:1h")
	b.keys("enter")
	if s := b.text(); !strings.Contains(s, "no operator action matches") {
		t.Fatalf("older:1h:\n%s", s)
	}
	b.keys("/", "ctrl+u")
	b.typeText("newer:soon")
	b.keys("enter")
	if s := b.text(); b.m.mode != modeAudit || !strings.Contains(s, "audit filter: newer") {
		t.Fatalf("a bad duration:\n%s", s)
	}
	b.keys("esc") // clears the filter
	if s := b.text(); !strings.Contains(s, "alice") || !strings.Contains(s, "tester") {
		t.Fatalf("esc did not clear the filter:\n%s", s)
	}
	b.keys("esc")
	if b.m.mode != modeNormal || b.m.view != viewFailed {
		t.Fatalf("esc did not close the audit log: mode %d", b.m.mode)
	}
}

// TestParkAsksForAReason: park and skip record the reason typed on the prompt
// line; enter without one does nothing, esc cancels. Enter after a reason
// runs nothing: it asks for yes, naming the action, the count and the ids;
// yes and enter park the event with the reason.
func TestParkAsksForAReason(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.keys("2", "x", "enter")
	if b.m.mode != modeConfirm {
		t.Fatalf("enter without a reason left the prompt:\n%s", b.text())
	}
	b.keys("y") // typed, not a confirmation
	b.keys("esc")
	if b.m.mode != modeNormal || b.count(`SELECT count(*) FROM outbox_audit`) != 0 {
		t.Fatalf("esc did not cancel:\n%s", b.text())
	}
	id := b.m.tables[viewPending].rows[0].id
	b.keys("x")
	b.typeText("duplicate order, customer called  ")
	b.keys("backspace", "enter")
	want := "Park 1 event? type yes + enter: █ (" + shortID(id) + ") reason: duplicate order, customer"
	if s := b.text(); b.m.mode != modeConfirm || !strings.Contains(s, want) || b.count(`SELECT count(*) FROM outbox_audit`) != 0 {
		t.Fatalf("enter after the reason did not ask for yes (%q):\n%s", want, s)
	}
	if s := b.text(); !strings.Contains(s, "type yes, enter run • any other key cancel") {
		t.Errorf("footer at the yes:\n%s", s)
	}
	// A stray key there cancels, reason and all.
	b.keys("Y")
	if b.m.mode != modeNormal || b.count(`SELECT count(*) FROM outbox_audit`) != 0 {
		t.Fatalf("Y did not cancel:\n%s", b.text())
	}
	b.keys("x")
	b.typeText("duplicate order, customer called")
	b.keys("enter", "y", "e", "s", "enter")
	if n := b.count(`SELECT count(*) FROM outbox_audit WHERE action = 'park' AND reason = 'duplicate order, customer called' AND actor = 'tester'`); n != 1 {
		t.Fatalf("%d park audit rows with the typed reason:\n%s", n, b.text())
	}
	if n := b.count(`SELECT count(*) FROM outbox_event WHERE event_id = $1 AND last_error = 'parked by tester: duplicate order, customer called'`, id); n != 1 {
		t.Fatalf("the parked event does not carry the reason")
	}
}
