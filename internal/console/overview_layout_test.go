package console

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"

	"github.com/outboxtop/outboxtop/internal/inspect"
	"github.com/outboxtop/outboxtop/wire"
)

// overviewCase is one Overview to draw without a database: a snapshot, the
// embedded relay's status (nil: none) and the console's extras.
type overviewCase struct {
	name   string
	snap   inspect.Snapshot
	relay  *RelayStatus
	extras int
}

func overviewCases() []overviewCase {
	at := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	failedAt := at.Add(-time.Hour)
	blocker := func(i int, failed bool) inspect.BlockedAggregate {
		e := inspect.Event{EventID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), AggregateType: "order",
			AggregateID: fmt.Sprintf("o-%d", i), EventType: "OrderPlaced", State: wire.Scheduled,
			AvailableAt: at.Add(time.Minute), LastError: strings.Repeat("broker not available ", 5)}
		if failed {
			e.State, e.FailedAt = wire.Failed, &failedAt
		}
		return inspect.BlockedAggregate{AggregateType: "order", AggregateID: e.AggregateID, Waiting: int64(500 - i), Blocker: e}
	}
	quiet := inspect.Snapshot{TakenAt: at, Counts: inspect.Counts{Ready: 3, Pending: 3}}
	incident := inspect.Snapshot{TakenAt: at,
		Counts: inspect.Counts{Ready: 607, Waiting: 506, Scheduled: 50000, Pending: 50607, Failed: 200001,
			Approx: inspect.Approx{Scheduled: true, Failed: true}},
		FailedByError: []inspect.Group{{Key: "record too large", Count: 100000}, {Key: "TOPIC_AUTHORIZATION_FAILED", Count: 99000},
			{Key: "poison", Count: 1}},
		Blocked: inspect.Blocked{Count: 70001, Estimate: true}}
	for i := range 20 {
		incident.Blocked.Aggregates = append(incident.Blocked.Aggregates, blocker(i, i%2 == 0))
	}
	longError := &RelayStatus{BrokerReachable: false, LastError: strings.Repeat("kafka: dial tcp 127.0.0.1:9092: connection refused ", 6),
		LastErrorAt: at.Add(-time.Minute)}
	return []overviewCase{
		{name: "quiet, no relay", snap: quiet},
		{name: "quiet, relay", snap: quiet, relay: &RelayStatus{BrokerReachable: true}},
		{name: "incident, no relay", snap: incident},
		{name: "incident, relay error", snap: incident, relay: longError},
		{name: "incident, relay error, four extras", snap: incident, relay: longError, extras: 4},
		{name: "incident, paused relay, extras", snap: incident, relay: &RelayStatus{Paused: true, BrokerReachable: true}, extras: 2},
		{name: "incident, horizon held by a session, relay error", snap: withHorizon(incident, heldSession(at)), relay: longError},
		{name: "incident, horizon held by a slot", snap: withHorizon(incident, heldSlot())},
		{name: "incident, heads held, fences lost", snap: incident, relay: &RelayStatus{BrokerReachable: true,
			HeadsLocked: 3, Released: 1200, LostFences: 2}},
	}
}

// heldSession is a report idle in transaction for 12 minutes, its application
// name hostile.
func heldSession(at time.Time) inspect.XminHolder {
	start, xact := at.Add(-time.Hour), at.Add(-12*time.Minute)
	return inspect.XminHolder{Kind: inspect.HolderSession, PID: 4242, User: "alice", Application: "psql\x1b[31m\u202e",
		Name: "alice psql", State: "idle in transaction", Age: inspect.Age(12 * time.Minute), XminAge: 630,
		BackendStart: &start, XactStart: &xact}
}

func heldSlot() inspect.XminHolder {
	inactive := false
	return inspect.XminHolder{Kind: inspect.HolderSlot, Name: "debezium", SlotType: "logical", Holds: "catalog_xmin",
		SlotActive: &inactive, XminAge: 2_100_000}
}

func withHorizon(s inspect.Snapshot, holders ...inspect.XminHolder) inspect.Snapshot {
	s.Health.Horizon = inspect.Horizon{Holders: holders, OutboxDeadRows: 630_000}
	s.Health.OldestXmin = s.Health.Horizon.Oldest()
	return s
}

func drawOverview(t *testing.T, c overviewCase, w, h int) (*Model, string) {
	t.Helper()
	in, err := inspect.New(nil, "public")
	if err != nil {
		t.Fatal(err)
	}
	var extras []Extra
	for i := range c.extras {
		extras = append(extras, Extra{Key: key.NewBinding(key.WithKeys(fmt.Sprint(i)), key.WithHelp(fmt.Sprint(i), "fault")),
			State: func() string { return "on" }})
	}
	var relay Relay
	if c.relay != nil {
		relay = &stubRelay{status: *c.relay}
	}
	m := New(Options{Inspector: in, Now: func() time.Time { return c.snap.TakenAt }, Relay: relay, Extras: extras})
	m.Update(teaSize(w, h))
	m.Update(loadedMsg{overview: newOverviewVM(c.snap, relay, extras)})
	return m, plain(m.Render())
}

// TestOverviewSectionsStartOnOneLine: whatever the counts, the relay's error or
// the extras, the blocked aggregates' title is on the same line of the screen,
// and no section of the pane vanishes: each shows, or says it is hidden.
func TestOverviewSectionsStartOnOneLine(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {100, 30}, {120, 40}} {
		line := -1
		for _, c := range overviewCases() {
			_, screen := drawOverview(t, c, size[0], size[1])
			lines := strings.Split(screen, "\n")
			if len(lines) != size[1] {
				t.Errorf("%s at %v: %d lines", c.name, size, len(lines))
			}
			at := -1
			for i, l := range lines {
				if w := len([]rune(l)); w > size[0] {
					t.Errorf("%s at %v: line %d is %d wide: %q", c.name, size, i, w, l)
				}
				if strings.HasPrefix(l, "BLOCKED AGGREGATES") {
					at = i
				}
			}
			if !strings.Contains(screen, "FAILED BY ERROR") {
				t.Errorf("%s at %v: FAILED BY ERROR is gone:\n%s", c.name, size, screen)
			}
			banner := 0
			if r := c.relay; r != nil && (r.Paused || !r.BrokerReachable) {
				banner = 1
			}
			switch {
			case at < 0:
				t.Errorf("%s at %v: no BLOCKED AGGREGATES:\n%s", c.name, size, screen)
			case line < 0:
				line = at - banner
			case at-banner != line:
				t.Errorf("%s at %v: BLOCKED AGGREGATES on line %d, want %d:\n%s", c.name, size, at-banner, line, screen)
			}
		}
	}
}

// TestOverviewKeepsMinimumRows: at 80×24 in an incident the blocked aggregates
// keep at least two rows and the error groups one, each cut with "… N more".
func TestOverviewKeepsMinimumRows(t *testing.T) {
	t.Parallel()
	for _, c := range overviewCases()[2:] {
		_, screen := drawOverview(t, c, 80, 24)
		if n := strings.Count(screen, " waiting behind "); n < 2 {
			t.Errorf("%s: %d blocked aggregates shown:\n%s", c.name, n, screen)
		}
		if !strings.Contains(screen, "record too large") {
			t.Errorf("%s: no error group shown:\n%s", c.name, screen)
		}
		if n := strings.Count(screen, " more"); n < 2 {
			t.Errorf("%s: %d sections say how many more:\n%s", c.name, n, screen)
		}
	}
}

// TestBacklogForecast: "drains in" only from a measured drain with events being
// published and none stuck behind a blocker.
func TestBacklogForecast(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		out, waiting int64
		want         string
	}{
		{"draining", 150, 0, "drains in ~"},
		{"shrinking with events stuck", 150, 30, "shrinking · 30 stuck"},
		{"shrinking while nothing is published", 0, 0, "not draining"},
	} {
		in, _ := inspect.New(nil, "public")
		f := newFlow(10000)
		now := f.at
		m := New(Options{Inspector: in, Now: func() time.Time { return now }})
		m.Update(teaSize(80, 24))
		for range 20 {
			s := f.step(50, c.out)
			if c.out == 0 {
				// Parked or skipped, not published: the backlog shrinks all the same.
				f.backlog -= 100
				s.Counts.Ready, s.Counts.Pending = f.backlog, f.backlog
			}
			s.Counts.Waiting = c.waiting
			now = s.TakenAt
			m.Update(loadedMsg{overview: newOverviewVM(s, nil, nil)})
		}
		if got := screenLine(m.Render(), "backlog"); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestMissingTopicIsABanner: events waiting for a topic that does not exist are
// named on the banner line, in every view, with the topic sanitized.
func TestMissingTopicIsABanner(t *testing.T) {
	t.Parallel()
	c := overviewCases()[2]
	c.relay = &RelayStatus{BrokerReachable: true, MissingTopics: []MissingTopic{
		{Topic: "outbox.order\x1b[2J", Events: 506}, {Topic: "outbox.invoice", Events: 3}}}
	m, screen := drawOverview(t, c, 80, 24)
	want := "TOPIC outbox.order"
	lines := strings.Split(screen, "\n")
	if !strings.Contains(lines[2], want) || !strings.Contains(lines[2], "506 events wait for it (+1 more topics)") {
		t.Fatalf("no banner naming the topic on line 3:\n%s", screen)
	}
	if strings.Contains(m.Render(), "\x1b[2J") {
		t.Fatal("the topic's escape sequence reached the screen")
	}
	m.Update(keyMsg("4"))
	if !strings.Contains(plain(m.Render()), want) {
		t.Fatalf("the banner is gone in Failed:\n%s", plain(m.Render()))
	}
}

// TestOverviewMarksEveryBound: a count that stopped at its cap carries its mark
// (≥, ≤) on the Overview and the tabs; an exact one carries none.
func TestOverviewMarksEveryBound(t *testing.T) {
	t.Parallel()
	c := overviewCases()[2]
	c.snap.Counts.Publishable = 101
	c.snap.Counts.Bounds = inspect.Bounds{Ready: inspect.LowerBound, Waiting: inspect.LowerBound, Publishable: inspect.LowerBound,
		Pending: inspect.LowerBound, Failed: inspect.LowerBound}
	c.snap.Blocked.Bound = inspect.LowerBound
	_, screen := drawOverview(t, c, 80, 24)
	for _, want := range []string{"ready          ≥607", "publishable   ≥101", "waiting       ≥506", "scheduled      50000 ",
		"failed         ≥200001", "BLOCKED AGGREGATES (≥70001)", "4 Failed ≥200k", "2 Pending ≥50k"} {
		if !strings.Contains(screen, want) {
			t.Errorf("no %q in\n%s", want, screen)
		}
	}
	c.snap.Counts.Bounds, c.snap.Blocked.Bound = inspect.Bounds{}, inspect.Exact
	c.snap.Counts.Approx, c.snap.Blocked.Estimate = inspect.Approx{}, false
	if _, screen := drawOverview(t, c, 80, 24); strings.ContainsAny(screen, "≥≤~") {
		t.Errorf("an exact snapshot shows a mark:\n%s", screen)
	}
}

// TestMissingTopicBannerWithoutARelay: a console without an embedded relay shows
// the topics its MissingTopics reader finds, sanitized, and a failing reader only
// leaves the banner out.
func TestMissingTopicBannerWithoutARelay(t *testing.T) {
	t.Parallel()
	fail := false
	b := setup(t, Options{MissingTopics: func(context.Context) ([]MissingTopic, error) {
		if fail {
			return nil, errors.New("permission denied")
		}
		return []MissingTopic{{Topic: "outbox.ship\u202ement", Events: 25}}, nil
	}})
	if s := b.text(); !strings.Contains(s, "TOPIC outbox.ship<U+202E>ment DOES NOT EXIST: 25 events wait for it") {
		t.Fatalf("no banner:\n%s", s)
	}
	fail = true
	b.run(b.m.startLoad())
	if s := b.text(); strings.Contains(s, "DOES NOT EXIST") || !strings.Contains(s, "BLOCKED AGGREGATES") {
		t.Fatalf("after a failed read:\n%s", s)
	}
}

// Every figure of the relay's status reaches the console, the ones that only
// matter in an incident shown only then: heads held by another session,
// batches given back, marks that lost their lease.
func TestOverviewShowsHeldHeadsAndLostFences(t *testing.T) {
	t.Parallel()
	for _, c := range overviewCases() {
		_, screen := drawOverview(t, c, 80, 24)
		r := c.relay
		held := r != nil && r.HeadsLocked > 0
		if got := strings.Contains(screen, "heads held locked by another session"); got != held {
			t.Errorf("%s: heads-held line shown %v, want %v:\n%s", c.name, got, held, screen)
		}
		given := r != nil && (r.Released > 0 || r.LostFences > 0)
		if got := strings.Contains(screen, "lost fences"); got != given {
			t.Errorf("%s: given-back line shown %v, want %v:\n%s", c.name, got, given, screen)
		}
	}
}
