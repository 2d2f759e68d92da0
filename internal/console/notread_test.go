package console

import (
	"errors"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/outboxtop/outboxtop/internal/inspect"
)

// TestOverviewBeforeTheFirstRead: until the first read of the outbox
// completes, the overview says it is reading and shows no figure: a zero
// (ready 0, failed 0, no blocked aggregate) would claim what is not known.
// A first read that fails says so; once one completes the figures appear.
func TestOverviewBeforeTheFirstRead(t *testing.T) {
	m := offline(t, 80, 24)
	screen := ansi.Strip(m.View().Content)
	if !strings.Contains(screen, "reading the outbox") {
		t.Fatalf("before the first read:\n%s", screen)
	}
	for _, figure := range []string{"ready ", "failed ", "BLOCKED", "backlog"} {
		if strings.Contains(screen, figure) {
			t.Errorf("before the first read the overview shows %q:\n%s", figure, screen)
		}
	}
	m.Update(loadedMsg{err: errors.New("connection refused")})
	if screen := ansi.Strip(m.View().Content); !strings.Contains(screen, "not read:") || strings.Contains(screen, "ready ") {
		t.Errorf("after a failed first read:\n%s", screen)
	}
	m.Update(listLoaded(m, viewOverview, inspect.Counts{Ready: 7}))
	if screen := ansi.Strip(m.View().Content); strings.Contains(screen, "reading the outbox") || !strings.Contains(screen, "ready ") {
		t.Errorf("after the first read:\n%s", screen)
	}
}
