package console

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// TestParseQueryPayloadAndHeaderTerms: payload: and header: take what
// --payload and --header take, a space inside a JSON string or object kept;
// bad syntax is refused with the term named.
func TestParseQueryPayloadAndHeaderTerms(t *testing.T) {
	t.Parallel()
	q, err := parseQuery(`payload:customer.name="Ann Lee" boom payload:{"tier": "gold", "n": [1, 2]} header:trace-id=abc type:OrderPlaced Payload:items[*].sku`)
	if err != nil {
		t.Fatal(err)
	}
	f := q.filter
	if want := []string{`customer.name="Ann Lee"`, `{"tier": "gold", "n": [1, 2]}`, "items[*].sku"}; !slices.Equal(f.Payload, want) {
		t.Errorf("payload terms %q, want %q", f.Payload, want)
	}
	if !slices.Equal(f.Headers, []string{"trace-id=abc"}) || !slices.Equal(f.Words, []string{"boom"}) || f.EventType != "OrderPlaced" {
		t.Errorf("parsed %+v", f)
	}
	for _, c := range []struct{ text, want string }{
		{"payload:customer..id", `payload search "customer..id": empty key`},
		{`payload:a="open`, "payload term: unterminated quote"},
		{`payload:{"a":`, "not a JSON object"},
		{"header:=abc", "empty header key"},
		{"payload:a=\x00", "NUL"},
	} {
		if _, err := parseQuery(c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
}

// TestStoppedSearchIsLabelled: a search that stopped at its budget says so on
// the list line, with the Overview's count of the state; the filter line shows
// what was typed, control characters made visible.
func TestStoppedSearchIsLabelled(t *testing.T) {
	t.Parallel()
	m := offline(t, 80, 24)
	press(m, "4", "/")
	for _, r := range "payload:note=\x1b[31mred" {
		m.Update(keyMsg(string(r)))
	}
	press(m, "enter")
	msg := listLoaded(m, viewFailed, inspect.Counts{Failed: 1_000_000}, failedEvent("d1000000-0000-4000-8000-000000000001", "ord-1", 1))
	msg.scan = &inspect.Scan{Scanned: 100_000, Stopped: true}
	msg.total = inspect.Count{Value: 1, Bound: inspect.LowerBound}
	m.Update(msg)
	s := screenText(m)
	if !strings.Contains(s, "FAILED · 1 found · searched 100000 of 1000000 failed events: narrow the search") {
		t.Errorf("no label:\n%s", s)
	}
	if strings.Contains(s, "\x1b[31m") {
		t.Errorf("an escape sequence typed in the filter reached the screen:\n%q", s)
	}
	msg.scan = &inspect.Scan{Scanned: 12}
	msg.total = inspect.Count{Value: 1}
	m.Update(msg)
	if s := screenText(m); strings.Contains(s, "searched") || !strings.Contains(s, "1 listed") {
		t.Errorf("a search that read every row is labelled:\n%s", s)
	}
}

// TestConsoleSearchesPayloads: / with payload: and header: terms lists the
// matching failed events from the database; a search past its budget stops,
// says so, and scrolling to the end searches further. Not parallel: it sets
// the budget.
func TestConsoleSearchesPayloads(t *testing.T) {
	b := setup(t, Options{})
	if _, err := b.pool.Exec(context.Background(), `INSERT INTO outbox_event (event_id, aggregate_type, aggregate_id, event_type, payload, headers, failed_at, last_error)
		SELECT ('f7000000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, 'Order', 'cust-' || g, 'OrderPlaced',
			jsonb_build_object('customer', jsonb_build_object('id', g % 50, 'tier', CASE WHEN g % 2 = 0 THEN 'gold' END)),
			jsonb_build_object('trace-id', 't' || g), now() - g * interval '1 second', 'boom'
		FROM generate_series(1, 300) g`); err != nil {
		t.Fatal(err)
	}
	old := searchRows
	searchRows = 100
	t.Cleanup(func() { searchRows = old })
	b.keys("4", "/")
	b.typeText(`payload:customer.id=7 header:trace-id`)
	b.keys("enter")
	s := b.screen()
	// Newest failure first: cust-7 and cust-57 are within the first 100
	// rows of the seed's failed events and these.
	if !strings.Contains(s, "cust-7 ") || !strings.Contains(s, "cust-57") || strings.Contains(s, "cust-257") ||
		!strings.Contains(s, "searched 100 of") {
		t.Fatalf("first search:\n%s", s)
	}
	b.keys("/")
	b.m.filterInput = nil
	b.typeText(`payload:{"customer":{"id":7,"tier":"gold"}}`)
	b.keys("enter")
	if s := b.screen(); strings.Contains(s, "cust-") || !strings.Contains(s, "0 found · searched 100 of") {
		t.Fatalf("containment: customer 7 is not gold:\n%s", s)
	}
	// Scrolling to the end of what is loaded searches on.
	b.keys("/")
	b.m.filterInput = nil
	b.typeText(`payload:customer.id=7`)
	b.keys("enter")
	if s := b.screen(); strings.Contains(s, "cust-107") || !strings.Contains(s, "2 found · searched 100 of") {
		t.Fatalf("search by id:\n%s", s)
	}
	for range 3 {
		b.keys("G")
	}
	if s := b.screen(); !strings.Contains(s, "cust-257") || !strings.Contains(s, "FAILED · 6 listed") {
		t.Fatalf("the end of the rows found did not search further:\n%s", s)
	}
}
