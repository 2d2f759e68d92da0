package console

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// A held horizon is one line above the sections, naming the holder with the
// database's text sanitized, the dead rows and T; T asks for yes and enter
// naming the pid, the holder and its age, and any other key cancels. A slot is named as one,
// with no T. Under the bounds there is no line.
func TestHorizonLine(t *testing.T) {
	t.Parallel()
	cases := overviewCases()
	at := cases[2].snap.TakenAt
	m, screen := drawOverview(t, overviewCase{name: "held", snap: withHorizon(cases[2].snap, heldSession(at))}, 80, 24)
	want := "horizon held 12m00s by pid 4242 alice@psq… (idle in xact) · 630k dead · T end it"
	if !strings.Contains(screen, want) {
		t.Fatalf("no %q:\n%s", want, screen)
	}
	m.Update(keyMsg("T"))
	// The question first: a narrow terminal cuts the holder's text, not the yes.
	if got, want := plain(m.Render()), "End pid 4242 with pg_terminate_backend? type yes + enter: █ (alice@psql^[[31m"; !strings.Contains(got, want) {
		t.Errorf("T: no %q:\n%s", want, got)
	}
	if m.confirm == nil || m.confirm.prompt() != "End pid 4242 with pg_terminate_backend? type yes + enter: █ (alice@psql^[[31m<U+202E>, idle in transaction, open 12m00s)" {
		t.Errorf("prompt %+v", m.confirm)
	}
	m.Update(keyMsg("y"))
	m.Update(keyMsg("n"))
	if got := plain(m.Render()); !strings.Contains(got, "cancelled: nothing changed") {
		t.Errorf("n did not cancel:\n%s", got)
	}

	_, screen = drawOverview(t, overviewCase{name: "slot", snap: withHorizon(cases[2].snap, heldSlot())}, 80, 24)
	if want := "horizon held by slot debezium (catalog_xmin, 2.1M xids) · 630k dead · drop it"; !strings.Contains(screen, want) ||
		strings.Contains(screen, "T end it") {
		t.Errorf("no %q:\n%s", want, screen)
	}

	young := heldSession(at)
	young.Age = inspect.Age(time.Minute)
	m, screen = drawOverview(t, overviewCase{name: "young", snap: withHorizon(cases[2].snap, young)}, 80, 24)
	if strings.Contains(screen, "horizon held") {
		t.Errorf("a transaction a minute old is shown held:\n%s", screen)
	}
	m.Update(keyMsg("T"))
	if got := plain(m.Render()); !strings.Contains(got, "the xmin horizon is not held: nothing to end") {
		t.Errorf("T with nothing held:\n%s", got)
	}
}

// A read-only console shows the line without T and refuses the key.
func TestHorizonReadOnly(t *testing.T) {
	t.Parallel()
	c := overviewCases()[2]
	in, err := inspect.New(nil, "public", inspect.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	snap := withHorizon(c.snap, heldSession(c.snap.TakenAt))
	m := New(Options{Inspector: in, Now: func() time.Time { return snap.TakenAt }})
	m.Update(teaSize(80, 24))
	m.Update(loadedMsg{overview: newOverviewVM(snap, nil, nil)})
	screen := plain(m.Render())
	if !strings.Contains(screen, "(idle in xact) · 630k dead · read-only") || strings.Contains(screen, "T end it") {
		t.Errorf("read-only line:\n%s", screen)
	}
	m.Update(keyMsg("T"))
	if got := plain(m.Render()); !strings.Contains(got, "read-only console: actions are refused") {
		t.Errorf("T in read-only:\n%s", got)
	}
}

// A standby's feedback is ended on the standby: the line says so instead of T.
func TestHorizonLineStandby(t *testing.T) {
	t.Parallel()
	c := overviewCases()[2]
	x := inspect.XminHolder{Kind: inspect.HolderStandby, PID: 77, User: "replicator", Application: "standby_b", State: "streaming",
		XminAge: inspect.HorizonHeldXids + 5}
	_, screen := drawOverview(t, overviewCase{name: "standby", snap: withHorizon(c.snap, x)}, 80, 24)
	if want := "horizon held by standby pid 77 replicato… (1M xids) · 630k dead · end on standby"; !strings.Contains(screen, want) {
		t.Errorf("no %q:\n%s", want, screen)
	}
}

// An active physical slot's xmin is a standby's feedback: ended on the standby,
// not by dropping the slot.
func TestHorizonLineActiveSlot(t *testing.T) {
	t.Parallel()
	c := overviewCases()[2]
	active := true
	x := inspect.XminHolder{Kind: inspect.HolderSlot, Name: "standby_b", SlotType: "physical", Holds: "xmin", SlotActive: &active,
		XminAge: inspect.HorizonHeldXids + 5}
	_, screen := drawOverview(t, overviewCase{name: "active slot", snap: withHorizon(c.snap, x)}, 80, 24)
	if want := "horizon held by slot standby_b (xmin, 1M xids) · 630k dead · end on standby"; !strings.Contains(screen, want) {
		t.Errorf("no %q:\n%s", want, screen)
	}
}
