package console

import (
	tea "charm.land/bubbletea/v2"
	"fmt"
	"github.com/charmbracelet/x/ansi"

	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// flow builds snapshots one second apart: in events arrive and out are published
// per second, over a starting backlog, as the database would report them.
type flow struct {
	at       time.Time
	inserted int64
	backlog  int64
	pubTimes []time.Time // when each second's batch was published, for the 10 s window
	pubPer   []int64
}

func newFlow(backlog int64) *flow {
	return &flow{at: time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), inserted: 1000, backlog: backlog}
}

// step advances one second with in arriving and out published.
func (f *flow) step(in, out int64) inspect.Snapshot {
	f.at = f.at.Add(time.Second)
	f.inserted += in
	f.backlog = max(f.backlog+in-out, 0)
	f.pubTimes = append(f.pubTimes, f.at)
	f.pubPer = append(f.pubPer, out)
	var last10 int64
	for i, t := range f.pubTimes {
		if f.at.Sub(t) < 10*time.Second {
			last10 += f.pubPer[i]
		}
	}
	ins := f.inserted
	return inspect.Snapshot{
		TakenAt:   f.at,
		Inserted:  &ins,
		Counts:    inspect.Counts{Ready: f.backlog, Pending: f.backlog},
		Published: inspect.PublishedRecent{Last10s: last10, CurrentPerSecond: float64(last10) / 10},
	}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if got < want-0.05 || got > want+0.05 {
		t.Errorf("%s = %.2f, want %.2f", what, got, want)
	}
}

// TestTrend asserts every rate the Overview shows, in the situations where the old
// one-minute average lied: start-up, a broker outage (or a paused relay: nothing
// published, events still arriving), recovery, and a short history.
func TestTrend(t *testing.T) {
	t.Parallel()
	t.Run("start-up: one snapshot says nothing about rates", func(t *testing.T) {
		var tr trend
		tr.add(sampleOf(newFlow(0).step(50, 50)))
		if _, ok := tr.incoming(); ok {
			t.Error("incoming rate from one snapshot")
		}
		if _, ok := tr.backlogRate(); ok {
			t.Error("backlog trend from one snapshot")
		}
	})
	t.Run("short history: two snapshots a second apart", func(t *testing.T) {
		var tr trend
		f := newFlow(100)
		tr.add(sampleOf(f.step(50, 50)))
		tr.add(sampleOf(f.step(50, 50)))
		in, ok := tr.incoming()
		near(t, "incoming", in, 50)
		if r, ok2 := tr.backlogRate(); !ok || !ok2 || r != 0 {
			t.Errorf("backlog rate %v (%v), want steady", r, ok2)
		}
	})
	t.Run("steady flow", func(t *testing.T) {
		var tr trend
		f := newFlow(100)
		var s inspect.Snapshot
		for range 40 {
			s = f.step(50, 50)
			tr.add(sampleOf(s))
		}
		in, _ := tr.incoming()
		near(t, "incoming", in, 50)
		near(t, "published now", s.Published.CurrentPerSecond, 50)
		if r, _ := tr.backlogRate(); r != 0 {
			t.Errorf("backlog rate %v, want 0", r)
		}
	})
	for _, name := range []string{"broker outage", "paused relay"} {
		t.Run(name+": published now reaches 0 within 10 s, backlog grows at the incoming rate", func(t *testing.T) {
			var tr trend
			f := newFlow(100)
			for range 40 {
				tr.add(sampleOf(f.step(50, 50)))
			}
			var s inspect.Snapshot
			for i := range 10 {
				s = f.step(50, 0)
				tr.add(sampleOf(s))
				if i < 9 && s.Published.CurrentPerSecond == 0 {
					t.Fatalf("rate reached 0 after %d s, before the window passed", i+1)
				}
			}
			near(t, "published now after 10 s", s.Published.CurrentPerSecond, 0)
			in, _ := tr.incoming()
			near(t, "incoming", in, 50)
			for range 30 {
				tr.add(sampleOf(f.step(50, 0)))
			}
			r, _ := tr.backlogRate()
			near(t, "backlog rate", r, 50)
			if _, ok := tr.drain(); ok {
				t.Error("a growing backlog has a drain time")
			}
		})
	}
	t.Run("recovery: the backlog drains, and says when it will be empty", func(t *testing.T) {
		var tr trend
		f := newFlow(10000)
		var last trendSample
		for range 31 {
			last = sampleOf(f.step(50, 150))
			tr.add(last)
		}
		r, _ := tr.backlogRate()
		near(t, "backlog rate", r, -100)
		d, ok := tr.drain()
		want := time.Duration(float64(last.backlog) / 100 * float64(time.Second))
		if !ok || d < want-time.Second || d > want+time.Second {
			t.Errorf("drain %v (%v), want %v", d, ok, want)
		}
	})
	t.Run("without the seq identity the incoming rate is published plus growth", func(t *testing.T) {
		var tr trend
		f := newFlow(100)
		for range 20 {
			s := f.step(50, 20)
			s.Inserted = nil
			tr.add(sampleOf(s))
		}
		in, _ := tr.incoming()
		near(t, "incoming", in, 50)
	})
	t.Run("the same snapshot twice is one sample", func(t *testing.T) {
		var tr trend
		s := sampleOf(newFlow(0).step(1, 1))
		tr.add(s)
		tr.add(s)
		if len(tr.samples) != 1 {
			t.Errorf("%d samples", len(tr.samples))
		}
	})
}

// TestOverviewRates: what the Overview prints from the trend during an outage.
func TestOverviewRates(t *testing.T) {
	t.Parallel()
	in, err := inspect.New(nil, "public")
	if err != nil {
		t.Fatal(err)
	}
	f := newFlow(10000)
	now := f.at
	m := New(Options{Inspector: in, Now: func() time.Time { return now }})
	m.Update(teaSize(80, 24))
	feed := func(in, out int64) {
		s := f.step(in, out)
		now = s.TakenAt
		m.Update(loadedMsg{overview: newOverviewVM(s, nil, nil)})
	}
	feed(50, 50)
	if got := screenLine(m.Render(), "rate out"); !strings.Contains(got, "measuring") {
		t.Errorf("start-up: %q", got)
	}
	for range 40 {
		feed(50, 50)
	}
	for range 10 {
		feed(50, 0)
	}
	for _, want := range []string{`rate out · in\s+0\.0/s · 50\.0/s`, `backlog\s+not draining · \+\d+\.\d/s`} {
		if !regexp.MustCompile(want).MatchString(plain(m.Render())) {
			t.Errorf("outage: no %q in\n%s", want, plain(m.Render()))
		}
	}
	for range 31 {
		feed(50, 150)
	}
	if !regexp.MustCompile(`backlog\s+drains in ~\d+m\d\ds\s`).MatchString(plain(m.Render())) {
		t.Errorf("recovery:\n%s", plain(m.Render()))
	}
}

func screenLine(screen, prefix string) string {
	for _, l := range strings.Split(plain(screen), "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func plain(s string) string { return ansi.Strip(s) }

func teaSize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

// TestRelayErrorAgesAndResolves: the last error shows its age in red while it is
// current; once the broker answers and events are published after it, it is
// dimmed and says so; a new error is red again.
func TestRelayErrorAgesAndResolves(t *testing.T) {
	t.Parallel()
	in, err := inspect.New(nil, "public")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	r := &stubRelay{status: RelayStatus{BrokerReachable: false, Published: 100, LastError: "kafka unreachable", LastErrorAt: now}}
	m := New(Options{Inspector: in, Relay: r, Now: func() time.Time { return now }})
	m.Update(teaSize(120, 40))
	load := func() {
		now = now.Add(5 * time.Second)
		m.Update(loadedMsg{overview: newOverviewVM(inspect.Snapshot{TakenAt: now}, r, nil)})
	}
	load()
	if got := lineWith(m.Render(), "last error"); !strings.Contains(got, "5s ago") || strings.Contains(got, "resolved") {
		t.Errorf("current error: %q", got)
	}
	r.set(func(s *RelayStatus) { s.BrokerReachable = true })
	load()
	if strings.Contains(plain(m.Render()), "resolved") {
		t.Error("resolved before anything was published")
	}
	r.set(func(s *RelayStatus) { s.Published = 150 })
	load()
	if !strings.Contains(plain(m.Render()), "15s ago, since resolved") {
		t.Errorf("not resolved:\n%s", plain(m.Render()))
	}
	r.set(func(s *RelayStatus) { s.LastError, s.LastErrorAt, s.BrokerReachable = "record too large", now, true })
	load()
	if strings.Contains(plain(m.Render()), "resolved") || !strings.Contains(plain(m.Render()), "record too large") {
		t.Errorf("a new error is not current:\n%s", plain(m.Render()))
	}
}

// TestPublishedEstimateDoesNotGoDown: the estimated published total holds its
// highest value between refreshes (statistics move in steps) until an archive.
func TestPublishedEstimateDoesNotGoDown(t *testing.T) {
	t.Parallel()
	in, err := inspect.New(nil, "public")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	m := New(Options{Inspector: in, Now: func() time.Time { return now }})
	m.Update(teaSize(80, 24))
	load := func(v int64) {
		now = now.Add(time.Second)
		s := inspect.Snapshot{TakenAt: now}
		s.Counts.Published = inspect.Count{Value: v, Estimate: true}
		m.Update(loadedMsg{overview: newOverviewVM(s, nil, nil)})
	}
	load(12685)
	load(11909)
	if !strings.Contains(plain(m.Render()), "5 Published ~12685") {
		t.Errorf("went down:\n%s", plain(m.Render()))
	}
	m.Update(actionDoneMsg{req: pendingAction{action: inspect.Archive, view: viewPublished}, result: inspect.Result{Rows: 1000}})
	load(11685)
	if !strings.Contains(plain(m.Render()), "5 Published ~11685") {
		t.Errorf("an archive did not lower it:\n%s", plain(m.Render()))
	}
}

func lineWith(screen, s string) string {
	for _, l := range strings.Split(plain(screen), "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// TestTabsKeepEveryViewAt80Columns: incident-sized counts shrink to 993k rather than
// cutting the last tabs off.
func TestTabsKeepEveryViewAt80Columns(t *testing.T) {
	t.Parallel()
	in, err := inspect.New(nil, "public")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	m := New(Options{Inspector: in, Now: func() time.Time { return now }})
	m.Update(teaSize(80, 24))
	s := inspect.Snapshot{TakenAt: now, Inbox: []inspect.Consumer{{Name: "billing"}}}
	s.Counts = inspect.Counts{Ready: 119066, Scheduled: 185716, Pending: 304782, Failed: 992851,
		Published: inspect.Count{Value: 1025900, Estimate: true}, Approx: inspect.Approx{Ready: true, Scheduled: true, Pending: true, Failed: true},
		Bounds: inspect.Bounds{Ready: inspect.LowerBound, Scheduled: inspect.LowerBound, Pending: inspect.LowerBound, Failed: inspect.LowerBound}}
	m.Update(loadedMsg{overview: newOverviewVM(s, nil, nil)})
	tabs := strings.Split(plain(m.Render()), "\n")[1]
	for _, want := range []string{"2 Pending ≥304k", "4 Failed ≥992k", "5 Pub ~1M", "6 Cons 1"} {
		if !strings.Contains(tabs, want) {
			t.Errorf("tabs %q lack %q", tabs, want)
		}
	}
}

// TestNeverLoadedListSaysSo: with the database down from the start a list does not
// claim "0 listed … (none)" while its tab has a count; it says it was not loaded,
// and the status line leads with the cause.
func TestNeverLoadedListSaysSo(t *testing.T) {
	t.Parallel()
	in, err := inspect.New(nil, "public")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	m := New(Options{Inspector: in, Now: func() time.Time { return now }})
	m.Update(teaSize(80, 24))
	m.view = viewFailed
	if got := plain(m.Render()); !strings.Contains(got, "FAILED · loading…") || !strings.Contains(got, "(loading…)") {
		t.Errorf("before the first load:\n%s", got)
	}
	m.Update(loadedMsg{req: loadRequest{view: viewFailed}, err: fmt.Errorf("snapshot: failed to connect to `host=db`:\n\tdial error: connection refused")})
	got := plain(m.Render())
	if !strings.Contains(got, "not loaded: the database does not answer") || strings.Contains(got, "0 listed") ||
		!strings.Contains(got, "database: connection refused") {
		t.Errorf("database down:\n%s", got)
	}
}
