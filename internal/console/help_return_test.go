package console

import (
	"testing"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// TestHelpReturnsToWhatItCovered: any key closes help back onto the detail or
// timeline it was opened over, not onto the list with that view still open
// behind it (whose late reads it would take, and which the next prompt would
// be drawn over).
func TestHelpReturnsToWhatItCovered(t *testing.T) {
	m := offline(t, 80, 24)
	press(m, "4")
	e := failedEvent("d1000000-0000-4000-8000-000000000001", "ord-1", 1)
	m.Update(listLoaded(m, viewFailed, inspect.Counts{Failed: 1}, e))
	for _, open := range []struct {
		key  string
		mode mode
	}{{"enter", modeDetail}, {"A", modeAggregate}, {"L", modeAudit}} {
		press(m, open.key)
		if m.mode != open.mode {
			t.Fatalf("%s opened mode %d", open.key, m.mode)
		}
		press(m, "?")
		if m.mode != modeHelp {
			t.Fatalf("? over mode %d: mode %d", open.mode, m.mode)
		}
		press(m, "x")
		if m.mode != open.mode {
			t.Fatalf("help over mode %d closed onto mode %d", open.mode, m.mode)
		}
		press(m, "esc")
		if m.mode != modeNormal {
			t.Fatalf("esc from mode %d: mode %d", open.mode, m.mode)
		}
	}
}
