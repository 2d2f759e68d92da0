package console

import (
	"strings"
	"testing"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// TestFilterHintStaysOnItsList: the hint a jump from the Overview leaves under a
// filtered list is about that list: the detail and the timeline opened from it
// do not show it; back on the list it is there again.
func TestFilterHintStaysOnItsList(t *testing.T) {
	m := offline(t, 80, 24)
	hint := "Failed events with this error · esc clears the filter"
	m.jumpToList(viewFailed, query{text: "err:boom", filter: inspect.Filter{ErrorContains: "boom"}}, hint)
	m.Update(listLoaded(m, viewFailed, inspect.Counts{Failed: 1}, failedEvent("d1000000-0000-4000-8000-000000000001", "ord-1", 1)))
	if !strings.Contains(screenText(m), hint) {
		t.Fatalf("the list lacks its hint:\n%s", screenText(m))
	}
	press(m, "enter")
	if m.mode != modeDetail || strings.Contains(screenText(m), hint) {
		t.Fatalf("the detail shows the list's hint (mode %d):\n%s", m.mode, screenText(m))
	}
	press(m, "esc")
	if !strings.Contains(screenText(m), hint) {
		t.Fatalf("back on the list, the hint is gone:\n%s", screenText(m))
	}
	press(m, "A")
	if m.mode != modeAggregate || strings.Contains(screenText(m), hint) {
		t.Fatalf("the timeline shows the list's hint (mode %d):\n%s", m.mode, screenText(m))
	}
	// What is said on the timeline is shown there.
	m.Update(timelineOf("Order", "ord-1"))
	press(m, "g", "r")
	if s := screenText(m); !strings.Contains(s, "retry does not apply to a published event") {
		t.Fatalf("the timeline's own status is not shown:\n%s", s)
	}
}
