package fleet

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// The no-relay check, shared by `status` and every row of `status --fleet`:
// off by default, crossed by the time since a relay was last live, and at once
// when none was ever seen.
func TestNoRelayCheck(t *testing.T) {
	gone := inspect.Snapshot{Relays: []inspect.RelaySeen{
		{Holder: "a:1", State: inspect.RelayGone, SeenAge: inspect.Age(10 * time.Minute)},
		{Holder: "b:2", State: inspect.RelayStopped, SeenAge: inspect.Age(20 * time.Minute)}}}
	live := inspect.Snapshot{Relays: []inspect.RelaySeen{{Holder: "a:1", State: "running", SeenAge: inspect.Age(time.Second)}}}
	for _, c := range []struct {
		name       string
		s          inspect.Snapshot
		warn, crit time.Duration
		want       Level
		crossed    string
	}{
		{"off by default", inspect.Snapshot{}, 0, 0, OK, ""},
		{"a relay live", live, time.Minute, 5 * time.Minute, OK, ""},
		{"gone 10m, warn 1m", gone, time.Minute, 0, Warning, "no relay seen for 10m0s > 1m0s"},
		{"gone 10m, crit 5m", gone, time.Minute, 5 * time.Minute, Critical, "no relay seen for 10m0s > 5m0s"},
		{"gone 10m, crit 1h", gone, time.Minute, time.Hour, Warning, "no relay seen for 10m0s > 1m0s"},
		{"never seen, warn", inspect.Snapshot{}, time.Minute, 0, Warning, "no relay ever seen"},
		{"never seen, crit", inspect.Snapshot{}, time.Minute, time.Hour, Critical, "no relay ever seen"},
		{"unreadable", inspect.Snapshot{RelaysError: "permission denied"}, time.Minute, 0, Warning, "the heartbeats could not be read"},
	} {
		th := Thresholds{WarnOldest: -1, CritOldest: -1, WarnFailed: -1, CritFailed: -1, WarnBlocked: -1, CritBlocked: -1,
			WarnNoRelay: c.warn, CritNoRelay: c.crit}
		got := th.Check(c.s, 0)
		if got.Level != c.want || c.crossed == "" && len(got.Crossed) > 0 ||
			c.crossed != "" && (len(got.Crossed) != 1 || !strings.Contains(got.Crossed[0], c.crossed)) {
			t.Errorf("%s: level %v, crossed %q; want %v, %q", c.name, got.Level, got.Crossed, c.want, c.crossed)
		}
	}
}

// A count that is a lower bound crosses a threshold for certain when it is past
// it, and is unsure of one it stays under: the level says what is known, Unsure
// what is not. An exact count is never unsure.
func TestLowerBoundThresholds(t *testing.T) {
	var s inspect.Snapshot
	s.Counts.Failed, s.Counts.Bounds.Failed = 250001, inspect.LowerBound
	s.Blocked.Count = 3
	c := Thresholds{WarnFailed: 0, CritFailed: 1000000, WarnBlocked: 10, CritBlocked: -1}.Check(s, 0)
	if c.Level != Warning || len(c.Crossed) != 1 || c.Crossed[0] != "failed ≥250001 > 0" {
		t.Errorf("level %v, crossed %q", c.Level, c.Crossed)
	}
	if len(c.Unsure) != 1 || !strings.Contains(c.Unsure[0], "failed ≥250001: a lower bound, not known to be within 1000000") {
		t.Errorf("unsure %q", c.Unsure)
	}
	if c.Thresholds[1].Bound != inspect.LowerBound || c.Thresholds[2].Bound != inspect.Exact {
		t.Errorf("thresholds %+v", c.Thresholds)
	}
}

// The xmin horizon check, shared by `status` and every row of `status --fleet`:
// the oldest timed holder's age against the bounds, named by kind and pid only;
// a slot (no transaction time) past inspect.HorizonHeldXids is a WARNING of its
// own; off when both bounds are 0.
func TestHorizonCheck(t *testing.T) {
	session := inspect.XminHolder{Kind: inspect.HolderSession, PID: 42, Name: "alice \x1b[31mpsql", Age: inspect.Age(12 * time.Minute), XminAge: 630}
	slot := inspect.XminHolder{Kind: inspect.HolderSlot, Name: "unread", XminAge: inspect.HorizonHeldXids + 1}
	for _, c := range []struct {
		name       string
		h          inspect.Horizon
		warn, crit time.Duration
		want       Level
		crossed    string
	}{
		{"off", inspect.Horizon{Holders: []inspect.XminHolder{session}}, 0, 0, OK, ""},
		{"none", inspect.Horizon{}, inspect.HorizonWarnAfter, inspect.HorizonCritAfter, OK, ""},
		{"12m past 5m", inspect.Horizon{Holders: []inspect.XminHolder{session}}, inspect.HorizonWarnAfter, inspect.HorizonCritAfter, Warning,
			"xmin horizon 12m0s (session pid 42) > 5m0s"},
		{"12m past 10m crit", inspect.Horizon{Holders: []inspect.XminHolder{session}}, inspect.HorizonWarnAfter, 10 * time.Minute, Critical,
			"xmin horizon 12m0s (session pid 42) > 10m0s"},
		{"a slot past the xids", inspect.Horizon{Holders: []inspect.XminHolder{slot}}, inspect.HorizonWarnAfter, inspect.HorizonCritAfter, Warning,
			"xmin horizon held by replication slot: 1000001 transactions old"},
	} {
		th := DefaultThresholds()
		th.WarnFailed, th.WarnBlocked, th.WarnHorizon, th.CritHorizon = -1, -1, c.warn, c.crit
		got := th.Check(inspect.Snapshot{Health: inspect.Health{Horizon: c.h}}, 0)
		if got.Level != c.want || c.crossed == "" && len(got.Crossed) > 0 ||
			c.crossed != "" && (len(got.Crossed) != 1 || got.Crossed[0] != c.crossed) {
			t.Errorf("%s: level %v, crossed %q; want %v, %q", c.name, got.Level, got.Crossed, c.want, c.crossed)
		}
		for _, x := range got.Crossed {
			if strings.Contains(x, "alice") {
				t.Errorf("%s: the database's text in the verdict: %q", c.name, x)
			}
		}
	}
	if d := DefaultThresholds(); d.WarnHorizon != inspect.HorizonWarnAfter || d.CritHorizon != inspect.HorizonCritAfter {
		t.Errorf("defaults %v/%v", d.WarnHorizon, d.CritHorizon)
	}
}
