package console

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/outboxtop/outboxtop/internal/consumerlag"
	"github.com/outboxtop/outboxtop/internal/fleet"
	"github.com/outboxtop/outboxtop/internal/inspect"
)

// quits reports whether cmd, run, asks the program to quit.
func quits(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	_, ok := cmd().(tea.QuitMsg)
	return ok
}

// As in k9s: q and esc go back from an outbox's console to the fleet, unless
// q is typed text or closes that console's help; ctrl+c quits from anywhere.
func TestFleetQGoesBackCtrlCQuits(t *testing.T) {
	t.Parallel()
	b := setupFleet(t)
	b.keys("j", "enter")
	if b.m.inner == nil {
		t.Fatalf("billing not opened:\n%s", b.screen())
	}
	if s := stripANSI(b.screen()); !strings.Contains(s, "q back to fleet") {
		t.Errorf("the console's footer does not say what q does:\n%s", s)
	}
	b.keys("4", "/")
	b.typeText("q")
	if b.m.inner == nil || !strings.Contains(stripANSI(b.screen()), "q█") {
		t.Fatalf("q typed into a filter left the console:\n%s", b.screen())
	}
	b.keys("esc", "?")
	b.keys("q")
	if b.m.inner == nil {
		t.Fatal("q closing the console's help left the console")
	}
	b.keys("q")
	if b.m.inner != nil {
		t.Fatalf("q did not return to the fleet:\n%s", b.screen())
	}
	if s := stripANSI(b.screen()); !strings.Contains(s, "outboxtop fleet") {
		t.Fatalf("not at the fleet:\n%s", s)
	}
	b.keys("enter")
	if b.m.inner == nil {
		t.Fatal("reopen failed")
	}
	if _, cmd := b.m.Update(keyMsg("ctrl+c")); !quits(cmd) {
		t.Error("ctrl+c inside an outbox's console does not quit")
	}
	b.keys("q")
	if _, cmd := b.m.Update(keyMsg("q")); !quits(cmd) {
		t.Error("q at the fleet does not quit")
	}
	if _, cmd := b.m.Update(keyMsg("ctrl+c")); !quits(cmd) {
		t.Error("ctrl+c at the fleet does not quit")
	}
}

func TestFleetHelpScreen(t *testing.T) {
	t.Parallel()
	b := setupFleet(t)
	if s := stripANSI(b.screen()); !strings.Contains(s, "? help") || !strings.Contains(s, "q quit") {
		t.Errorf("the footer does not name ? and q:\n%s", s)
	}
	b.keys("?")
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		b.size(size[0], size[1])
		golden(t, fmt.Sprintf("fleet-help-%dx%d", size[0], size[1]), b.screen())
	}
	b.size(80, 24)
	s := stripANSI(b.screen())
	for _, want := range []string{"q ctrl+c", "back to the fleet", "ctrl+c     quit outboxtop", "LAG AGE"} {
		if !strings.Contains(s, want) {
			t.Errorf("help lacks %q:\n%s", want, s)
		}
	}
	if _, cmd := b.m.Update(keyMsg("q")); quits(cmd) || b.m.helping {
		t.Fatal("q on the help screen should only close it")
	}
	if s := stripANSI(b.screen()); !strings.Contains(s, "OUTBOX") {
		t.Fatalf("help not closed:\n%s", s)
	}
}

// fixedRows are rows as a poller with lag checks would give them.
type fixedRows []fleet.Row

func (f fixedRows) Rows() []fleet.Row { return f }

func TestFleetLagColumnsGolden(t *testing.T) {
	t.Parallel()
	secs := func(d time.Duration) *consumerlag.Seconds { s := consumerlag.Seconds(d); return &s }
	base := func(name string, level fleet.Level) fleet.Row {
		return fleet.Row{Name: name, Schema: "public", Polled: true, Reachable: true, Level: level, Labels: map[string]string{"team": "payments"}}
	}
	lagging := base("orders", fleet.Warning)
	lagging.Brokers, lagging.Publishable, lagging.Relays, lagging.RateOut = []string{"k:9092"}, 3, 1, 12.5
	lagging.OldestPublishableAge = inspect.Age(2 * time.Second)
	lagging.Crossed = []string{"lag shipping 12040 > 1000"}
	lagging.Lag = &fleet.Lag{MaxLag: 12040, MaxLagGroup: "shipping", OldestAge: secs(7 * time.Minute)}
	silent := base("billing", fleet.OK)
	silent.Brokers = []string{"k2:9092"}
	silent.Lag = &fleet.Lag{Problem: "listing groups: no answer within 5s"}
	pending := base("catalog", fleet.OK)
	pending.Brokers = []string{"k3:9092"}
	plain := base("search", fleet.OK)
	m := NewFleet(FleetOptions{Source: fixedRows{lagging, silent, pending, plain}, Title: "fleet.toml"})
	b := &fleetBundle{t: t, m: m}
	for _, size := range [][2]int{{80, 24}, {100, 24}, {120, 40}, {140, 40}} {
		b.size(size[0], size[1])
		golden(t, fmt.Sprintf("fleet-lag-%dx%d", size[0], size[1]), b.screen())
	}
	b.size(120, 40)
	s := stripANSI(b.screen())
	for _, want := range []string{"LAG LAG AGE", " 12040   7m00s", "      ?       ?", "      …       …", "      -       -", "kafka: listing groups: no answer with"} {
		if !strings.Contains(s, want) {
			t.Errorf("120 columns lack %q:\n%s", want, s)
		}
	}
	b.size(80, 24)
	// At 80 the LAG column takes IN/S's place; the age is left out.
	if s := stripANSI(b.screen()); strings.Contains(s, "LAG AGE") || strings.Contains(s, "IN/S") ||
		!strings.Contains(s, "RELAY    LAG CONDITION") || !strings.Contains(s, "1  12040 lag shipping") {
		t.Errorf("80 columns:\n%s", s)
	}
}
