package console

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// TestLastErrorWrapsAtWords: a long error is wrapped between words, never
// through a number; a word wider than the screen is cut, to the width.
func TestLastErrorWrapsAtWords(t *testing.T) {
	long := strings.Repeat("x", 130)
	msg := "record too large: the event's payload is 1048577 bytes and the topic accepts at most 1000000 bytes; " +
		"raise max.message.bytes to 100000000 or publish with --kafka-max-message-bytes 1000000 " + long + " end"
	for _, w := range []int{80, 97, 120} {
		m := offline(t, w, 40)
		press(m, "4")
		e := failedEvent("d1000000-0000-4000-8000-000000000001", "ord-1", 1)
		m.Update(listLoaded(m, viewFailed, inspect.Counts{Failed: 1}, e))
		press(m, "enter")
		e.LastError = msg
		e.Payload, e.PayloadBytes = []byte("{}"), 2
		d := inspect.EventDetail{Event: e}
		m.Update(detailMsg{id: e.EventID, title: "OrderPlaced " + e.EventID, content: detailText(d, offlineNow)})
		lines := strings.Split(screenText(m), "\n")
		for _, word := range strings.Fields(msg) {
			if word == long {
				continue
			}
			found := false
			for _, l := range lines {
				found = found || strings.Contains(" "+l+" ", " "+word+" ")
			}
			if !found {
				t.Errorf("%d columns: %q is not whole on a line:\n%s", w, word, strings.Join(lines, "\n"))
			}
		}
		for _, l := range lines {
			if ansi.StringWidth(l) > w {
				t.Errorf("%d columns: a line of %d cells: %q", w, ansi.StringWidth(l), l)
			}
		}
		// Resized, the error is wrapped again for the new width.
		m.Update(tea.WindowSizeMsg{Width: 80, Height: 40})
		for _, l := range strings.Split(screenText(m), "\n") {
			if ansi.StringWidth(l) > 80 {
				t.Errorf("resized from %d to 80 columns: a line of %d cells: %q", w, ansi.StringWidth(l), l)
			}
		}
	}
}

// TestDetailShowsInboxesInEveryState: like outboxtop trace, the detail says
// which inboxes hold the event in every state, "none" included.
func TestDetailShowsInboxesInEveryState(t *testing.T) {
	for _, st := range []wire.State{wire.Ready, wire.Scheduled, wire.Leased, wire.Failed, wire.Published, inspect.Archived} {
		e := failedEvent("d1000000-0000-4000-8000-000000000001", "ord-1", 1)
		e.State = st
		e.Payload = []byte("{}")
		d := inspect.EventDetail{Event: e}
		if s := detailText(d, offlineNow); !strings.Contains(s, "\nINBOXES\n  none applied it") {
			t.Errorf("%s: no inboxes section:\n%s", st, s)
		}
		d.Consumed = []inspect.Consumption{{Consumer: "billing", ConsumedAt: offlineNow}}
		if s := detailText(d, offlineNow); !strings.Contains(s, "\nINBOXES\n  billing") || strings.Contains(s, "none applied it") {
			t.Errorf("%s: the inbox that applied it is not listed:\n%s", st, s)
		}
	}
}
