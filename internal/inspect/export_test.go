package inspect

// TestCaps are the bounds of what a Snapshot reads (see snapCaps), settable in
// tests so that tables on both sides of every cap stay small. Hinted,
// Unhinted, RankProbe and List (the blocked aggregates listed) left 0 keep
// their production values.
type TestCaps struct {
	Scan, Probe, Count, Failed, FailedGroups, BlockedProbe int
	Hinted, Unhinted, RankProbe, List                      int
}

// DefaultTestCaps are the production caps.
func DefaultTestCaps() TestCaps {
	c := defaultCaps
	return TestCaps{c.scan, c.probe, c.count, c.failed, c.failedGroups, c.blockedProbe, c.hinted, c.unhinted, c.rankProbe, c.list}
}

// SetTestCaps makes i's snapshots use c.
func SetTestCaps(i *Inspector, c TestCaps) {
	or := func(v, def int) int {
		if v == 0 {
			return def
		}
		return v
	}
	d := defaultCaps
	i.caps = &snapCaps{scan: c.Scan, probe: c.Probe, count: c.Count, failed: c.Failed,
		failedGroups: c.FailedGroups, blockedProbe: c.BlockedProbe,
		hinted: or(c.Hinted, d.hinted), unhinted: or(c.Unhinted, d.unhinted), rankProbe: or(c.RankProbe, d.rankProbe), list: or(c.List, d.list)}
}
