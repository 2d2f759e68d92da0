package console

import (
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/console/internal/seed"
)

// TestOverviewJumpErrorGroup: at 120×40 the error groups show under the blocked
// aggregates; enter on one lists the failed events with that error, and the
// filter it sets reads back the same when edited and applied again.
func TestOverviewJumpErrorGroup(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.size(120, 40)
	b.keys("1")
	b.text() // lays the Overview out, as the program draws after each key
	at := -1
	for i, x := range b.m.overviewShown {
		if x.kind == targetError && b.m.overview.failedByError[x.i].Key == "NOT_LEADER_FOR_PARTITION after 10 attempts" {
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("the error group is not a target: %v", b.m.overviewShown)
	}
	for range at {
		b.keys("j")
	}
	if l := cursorText(b.text()); !strings.Contains(l, "NOT_LEADER_FOR_PARTITION") {
		t.Fatalf("the cursor is on %q", l)
	}
	b.keys("enter")
	check := func() {
		t.Helper()
		tb := b.m.tables[viewFailed]
		if b.m.view != viewFailed || len(tb.rows) != 1 || tb.rows[0].id != seed.ID('d', 2) {
			t.Fatalf("enter on the error group: view %d, %d rows\n%s", b.m.view, len(tb.rows), b.text())
		}
		if s := b.text(); !strings.Contains(s, `filter err:"NOT_LEADER_FOR_PARTITION after 10 attempts"`) {
			t.Fatalf("the filter is not shown:\n%s", s)
		}
	}
	check()
	b.keys("/", "enter")
	check()
	b.keys("esc")
	if n := len(b.m.tables[viewFailed].rows); n != 3 {
		t.Fatalf("esc did not clear the filter: %d rows", n)
	}
}

// TestOverviewBreakdownsJumpType: at 80×24 t shows the breakdowns; enter on an
// event type opens its failed events when it has some, else its pending ones.
// Another t shows the error groups.
func TestOverviewBreakdownsJumpType(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	b.keys("1", "t")
	s := b.text()
	for _, want := range []string{"ATTEMPTS  0: 5 · 1: 4 · 2: 0 · 3-4: 1 · 5-9: 0 · 10+: 1", "BY EVENT TYPE", "OrderPlaced", "t errors"} {
		if !strings.Contains(s, want) {
			t.Fatalf("the breakdowns lack %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "BLOCKED AGGREGATES") {
		t.Fatalf("t did not replace the blocked aggregates:\n%s", s)
	}
	// The types: OrderPlaced (4 unpublished, one failed) first.
	if l := cursorText(s); !strings.Contains(l, "OrderPlaced") {
		t.Fatalf("the cursor is on %q, want OrderPlaced", l)
	}
	b.keys("enter")
	failed := b.count(`SELECT count(*) FROM outbox_event WHERE event_type = 'OrderPlaced' AND failed_at IS NOT NULL AND published_at IS NULL`)
	if tb := b.m.tables[viewFailed]; b.m.view != viewFailed || len(tb.rows) != failed || tb.rows[0].eventType != "OrderPlaced" {
		t.Fatalf("enter on OrderPlaced: view %d\n%s", b.m.view, b.text())
	}
	b.keys("1")
	b.text()
	at := -1
	for i, x := range b.m.overviewShown {
		if x.kind == targetType && b.m.overview.types[x.i].name == "CustomerCreated" {
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("CustomerCreated is not a target:\n%s", b.text())
	}
	b.keys("g")
	for range at {
		b.keys("j")
	}
	b.keys("enter")
	pending := b.count(`SELECT count(*) FROM outbox_event WHERE event_type = 'CustomerCreated' AND published_at IS NULL AND failed_at IS NULL AND (lease_until IS NULL OR lease_until <= now())`)
	if tb := b.m.tables[viewPending]; b.m.view != viewPending || len(tb.rows) != pending || !strings.Contains(b.text(), "filter type:CustomerCreated") {
		t.Fatalf("enter on CustomerCreated: view %d, want %d pending\n%s", b.m.view, pending, b.text())
	}
	// The next pane: the error groups, which 80×24 has no room for under the
	// blocked aggregates; enter on one lists its failed events.
	b.keys("1", "t")
	if s := b.text(); !strings.Contains(s, "FAILED BY ERROR") || !strings.Contains(s, "t blocked") || strings.Contains(s, "BY EVENT TYPE") {
		t.Fatalf("the second t:\n%s", s)
	}
	b.keys("j", "enter")
	if tb := b.m.tables[viewFailed]; b.m.view != viewFailed || len(tb.rows) != 1 || tb.rows[0].id != seed.ID('d', 3) {
		t.Fatalf("enter on the second error group:\n%s", b.text())
	}
	b.keys("1", "t")
	if s := b.text(); !strings.Contains(s, "BLOCKED AGGREGATES (5)") {
		t.Fatalf("the third t did not bring back the blocked aggregates:\n%s", s)
	}
}

// TestGoldenBreakdowns: the Overview's other panes (t, t) at both sizes.
func TestGoldenBreakdowns(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			t.Parallel()
			b := setup(t, Options{})
			b.size(size[0], size[1])
			b.keys("1", "t")
			golden(t, fmt.Sprintf("overview-types-%dx%d", size[0], size[1]), b.screen())
			b.keys("t")
			golden(t, fmt.Sprintf("overview-errors-%dx%d", size[0], size[1]), b.screen())
		})
	}
}

// cursorText is the line the cursor is on ("> …").
func cursorText(screen string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, "> ") {
			return l
		}
	}
	return ""
}

// TestQuoteTermRoundTrip: a jump's filter term reads back as the stored text and
// shows nothing a terminal would act on.
func TestQuoteTermRoundTrip(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"poison", "kafka: broker not available", `say "no"`, `back\slash`, "\x1b[31mred\r", "\u202eevil", "Bestellung_Ä", "tab\there"} {
		text := "err:" + quoteTerm(raw)
		if termtext.Sanitize(text) != text || strings.ContainsAny(text, "\x1b\r\u202e") {
			t.Errorf("%q shows as %q", raw, text)
		}
		q, err := parseQuery(text + " more")
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if q.filter.ErrorContains != raw {
			t.Errorf("%q reads back as %q", text, q.filter.ErrorContains)
		}
		if len(q.filter.Words) != 1 || q.filter.Words[0] != "more" {
			t.Errorf("%q: words %q", text, q.filter.Words)
		}
	}
	if _, err := parseQuery(`err:"open`); err == nil {
		t.Error("an unterminated quote was accepted")
	}
}
